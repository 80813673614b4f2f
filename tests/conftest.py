"""Shared test set-up: fixtures modules by area are loaded as pytest plugins."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).parent
sys.path.insert(0, str(TESTS))

pytest_plugins = ["mqtt_fixtures", "asr_fixtures"]
