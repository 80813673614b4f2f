"""The daemon as plugins see it: ``Assistant``, a run and its context.

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.context import (
    Assistant,
    RunContext,
    new_run_id,
)
from voiced.run import (
    CANNOT_DO,
    Phase,
    Run,
    StageFailed,
    StageTimeout,
)

__all__ = [
    "CANNOT_DO",
    "Assistant",
    "Phase",
    "Run",
    "RunContext",
    "StageFailed",
    "StageTimeout",
    "new_run_id",
]
