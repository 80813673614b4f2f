"""Shared test set-up: fixtures modules by area are loaded as pytest plugins."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))

pytest_plugins = ["mqtt_fixtures", "asr_fixtures", "sound_card"]

LONGEST_FIRST = ("test_soak.py", "test_readme.py", "test_gpu_extra.py", "test_setup_acceptance.py")
"""Modules that take minutes of real time each (the soak, a clone's install, other torches,
a real Home Assistant set up): run first, so that on several workers (scripts/test) they end
beside the rest of the suite, not after it."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest modules first, then the modules with more tests before those with fewer
    (xdist's own order, which ``--dist loadfile`` keeps unless told otherwise)."""
    first = {name: i for i, name in enumerate(LONGEST_FIRST)}
    per_module = Counter(item.path for item in items)
    items.sort(key=lambda item: (first.get(item.path.name, len(first)), -per_module[item.path]))


@pytest.fixture(scope="module")
def hassil() -> Any:
    """The hassil stage on the repository's home (``config/home.yaml``), loaded once a module;
    a module that needs another home defines its own ``hassil``."""
    from home_stages import home_hassil

    return home_hassil()


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[[str], Path]:
    """Writes a TOML text to ``voiced.toml`` in the test's folder and returns its path."""

    def write(text: str) -> Path:
        path = tmp_path / "voiced.toml"
        path.write_text(text)
        return path

    return write
