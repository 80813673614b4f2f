"""The contract of each stage kind (voiced/stages.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.stages import (
    STAGE_KINDS,
    Asr,
    AsrStream,
    Service,
    Sink,
    Source,
    Stage,
    StageCall,
    StageSpec,
    Tts,
    Vad,
    Wake,
    WakeDetection,
)

__all__ = [
    "STAGE_KINDS",
    "Asr",
    "AsrStream",
    "Service",
    "Sink",
    "Source",
    "Stage",
    "StageCall",
    "StageSpec",
    "Tts",
    "Vad",
    "Wake",
    "WakeDetection",
]
