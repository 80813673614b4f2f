"""Packages are found, not listed: the core (``voiced.*``, data folders included) and every
built-in plugin folder with its data folders.

``plugins/`` installs as ``voiced_plugins`` (see ``package-dir`` in pyproject.toml), so a new
folder plugin, ``plugins/<name>/__init__.py``, needs no entry here or in pyproject.toml. A data
folder inside a plugin (``intent_hassil/sentences``) is listed as a package of its own, so
setuptools installs its files without warning that it is absent from ``packages``.
"""

from setuptools import find_namespace_packages, find_packages, setup

SKIP = ["*.__pycache__", "__pycache__"]
plugin_roots = find_packages("plugins")
plugin_folders = find_namespace_packages(
    "plugins", include=[*plugin_roots, *(f"{root}.*" for root in plugin_roots)], exclude=SKIP
)
core = find_namespace_packages(include=["voiced", "voiced.*"], exclude=SKIP)
setup(packages=[*core, "voiced_plugins", *(f"voiced_plugins.{name}" for name in plugin_folders)])
