"""Stages outside the daemon: for a plugin command that runs a process of its own (a worker).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.building import make_stage
from voiced.chain import ChainError, EngineChain
from voiced.logs import setup_logging
from voiced.plugins import PluginHost, load_plugins

__all__ = [
    "ChainError",
    "EngineChain",
    "PluginHost",
    "load_plugins",
    "make_stage",
    "setup_logging",
]
