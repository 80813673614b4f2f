"""A dialled TCP connection that reached itself (voiced/net.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.net import reached_itself

__all__ = ["reached_itself"]
