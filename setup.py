"""Packages are found, not listed: the core (``voiced.*``, data folders included) and every
built-in plugin folder.

``plugins/`` installs as ``voiced_plugins`` (see ``package-dir`` in pyproject.toml), so a new
folder plugin, ``plugins/<name>/__init__.py``, needs no entry here or in pyproject.toml.
"""

from setuptools import find_namespace_packages, find_packages, setup

plugin_folders = [f"voiced_plugins.{name}" for name in find_packages("plugins")]
core = find_namespace_packages(include=["voiced", "voiced.*"], exclude=["*.__pycache__"])
setup(packages=[*core, "voiced_plugins", *plugin_folders])
