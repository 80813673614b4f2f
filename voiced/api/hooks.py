"""The hook markers and the hook contract (specs: voiced/hookspecs.py).

Public API for plugins: names here stay stable; the module behind them may move.
"""

from __future__ import annotations

from voiced.hookspecs import ONE_AT_A_TIME, hookimpl, hookspec

__all__ = ["ONE_AT_A_TIME", "hookimpl", "hookspec"]
