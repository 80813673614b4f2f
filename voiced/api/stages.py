"""The contract of each stage kind (voiced/stages.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.stages import (
    STAGE_KINDS,
    WAKE_SENSITIVITIES,
    Asr,
    AsrStream,
    NoVoice,
    SensitiveWake,
    Service,
    Sink,
    Source,
    SpeakerEncoder,
    Stage,
    StageCall,
    StageSpec,
    Tts,
    Vad,
    VoicePrint,
    Wake,
    WakeDetection,
)

__all__ = [
    "STAGE_KINDS",
    "WAKE_SENSITIVITIES",
    "Asr",
    "AsrStream",
    "NoVoice",
    "SensitiveWake",
    "Service",
    "Sink",
    "Source",
    "SpeakerEncoder",
    "Stage",
    "StageCall",
    "StageSpec",
    "Tts",
    "Vad",
    "VoicePrint",
    "Wake",
    "WakeDetection",
]
