"""Settings and config errors (voiced/config.py).

Public API for plugins: names here stay stable; the module behind them may move.
"""

from __future__ import annotations

from voiced.config import (
    ConfigError,
    Settings,
    deep_merge,
    load_settings,
    normalize_name,
    stage_base_name,
    stage_value,
)

__all__ = [
    "ConfigError",
    "Settings",
    "deep_merge",
    "load_settings",
    "normalize_name",
    "stage_base_name",
    "stage_value",
]
