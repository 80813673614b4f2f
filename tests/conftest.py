"""Shared test set-up: fixtures modules by area are loaded as pytest plugins."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))

pytest_plugins = ["mqtt_fixtures", "asr_fixtures"]


@pytest.fixture
def write_config(tmp_path: Path) -> Callable[[str], Path]:
    """Writes a TOML text to ``voiced.toml`` in the test's folder and returns its path."""

    def write(text: str) -> Path:
        path = tmp_path / "voiced.toml"
        path.write_text(text)
        return path

    return write
