"""Logs every pipeline event, one line each; prints them as JSON lines with ``--events``."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ConfigDict

from voiced.api.events import Event, EventType, print_json_line
from voiced.api.hooks import hookimpl
from voiced.api.logs import fields

log = logging.getLogger("voiced.events")

SUMMARY_KEYS = (
    "event",
    "text",
    "name",
    "slots",
    "speech",
    "message",
    "stage",
    "reason",
    "engine",
    "state",
    "latency_s",
    "seconds",
    "duration_s",
    "time_to_first_audio_s",
)


class LogEventsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = "text"  # text: a readable line per event; json: the event's JSON on stdout
    level: str = "INFO"


class EventLogger:
    """Writes events to the log (or stdout as JSON lines); never blocks the loop for long."""

    def __init__(self, options: LogEventsOptions, app: Any = None) -> None:
        self.options = options
        self.level = logging.getLevelName(options.level.upper())

    def load(self) -> None:
        if self.options.format not in ("text", "json"):
            raise ValueError(f"format must be 'text' or 'json', not {self.options.format!r}")

    def close(self) -> None:
        pass

    @hookimpl
    def voiced_event(self, event: Event) -> None:
        if self.options.format == "json":
            print_json_line(event)
            return
        level = logging.WARNING if event.type == EventType.ERROR else self.level
        if event.type == EventType.ENGINE_FALLBACK and _said_at_load(event):
            level = logging.DEBUG  # the engine chain said it already, once
        journal = fields(run_id=event.run_id, site_id=event.site_id, voiced_event=event.type)
        log.log(level, "%s", describe(event), extra=journal)


def describe(event: Event) -> str:
    run = f" run={event.run_id[:8]}" if event.run_id else ""
    parts = [f"{k}={event.data[k]!r}" for k in SUMMARY_KEYS if k in event.data]
    return f"[{event.site_id}]{run} {event.type} {' '.join(parts)}".rstrip()


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "service",
        "log",
        EventLogger,
        options=LogEventsOptions,
        description="log every event (text) or print it as JSON lines (json)",
    )


def _said_at_load(event: Event) -> bool:
    """A fallback at load time with an engine after it: the chain logs that itself."""
    return event.data.get("phase") == "load" and event.data.get("next") is not None
