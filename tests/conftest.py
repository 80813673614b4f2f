"""Shared test set-up: fixtures modules by area are loaded as pytest plugins."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))

pytest_plugins = ["mqtt_fixtures", "asr_fixtures", "sound_card"]


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
