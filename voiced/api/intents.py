"""Transcript, Intent, Response: what stages pass along (voiced/intents.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.intents import (
    Intent,
    Response,
    Transcript,
)

__all__ = [
    "Intent",
    "Response",
    "Transcript",
]
