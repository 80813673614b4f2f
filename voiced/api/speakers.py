"""The enrolled voices and who spoke (voiced/speakers.py, voiced/speaker_id.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.speaker_id import voices_path
from voiced.speakers import (
    UNKNOWN,
    MatchRule,
    SpeakerMatch,
    VoiceBook,
    VoiceBookError,
)

__all__ = [
    "UNKNOWN",
    "MatchRule",
    "SpeakerMatch",
    "VoiceBook",
    "VoiceBookError",
    "voices_path",
]
