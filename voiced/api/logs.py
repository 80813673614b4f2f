"""Structured log fields that reach the journal (voiced/logs.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.logs import fields

__all__ = ["fields"]
