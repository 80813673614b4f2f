"""Pipeline events: a small envelope, JSON-serializable, broadcast through ``voiced_event``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class EventType(StrEnum):
    READY = "ready"
    STAGE_LOADED = "stage-loaded"
    ENGINE_FALLBACK = "engine-fallback"
    RUN_START = "run-start"
    WAKE = "wake"
    WAKE_IGNORED = "wake-ignored"
    VAD_START = "vad-start"
    VAD_END = "vad-end"
    TRANSCRIPT = "transcript"
    INTENT = "intent"
    INTENT_NOT_RECOGNIZED = "intent-not-recognized"
    HANDLED = "handled"
    TTS_START = "tts-start"
    TTS_AUDIO = "tts-audio"
    TTS_END = "tts-end"
    PLAYBACK_END = "playback-end"
    RUN_END = "run-end"
    STATE = "state"
    MUTED = "muted"
    TIMER = "timer"
    ERROR = "error"
    RELOAD = "reload"
    SHUTDOWN = "shutdown"


@dataclass(frozen=True)
class Event:
    """One step of the pipeline: what happened, in which run, at which site, when."""

    type: str
    run_id: str | None = None
    site_id: str = "default"
    data: dict[str, Any] = field(default_factory=dict)
    t: float = field(default_factory=time.time)
    mono: float = field(default_factory=time.monotonic)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": str(self.type),
            "run_id": self.run_id,
            "site_id": self.site_id,
            "t": round(self.t, 6),
            "data": self.data,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=_json_default, ensure_ascii=False)


def _json_default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)


def error_event(
    stage: str, message: str, run_id: str | None = None, site_id: str = "default", **data: Any
) -> Event:
    """An ``error`` event naming the stage that failed and why."""
    return Event(EventType.ERROR, run_id, site_id, {"stage": stage, "message": message, **data})
