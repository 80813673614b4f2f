"""Per-site state derived from pipeline events: what the retained topics show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voiced.events import Event, EventType

STATES = ("idle", "listening", "thinking", "speaking")
STATE_AFTER = {
    EventType.RUN_START: "listening",
    EventType.VAD_START: "listening",
    EventType.VAD_END: "thinking",
    EventType.TRANSCRIPT: "thinking",
    EventType.TTS_START: "speaking",
    EventType.RUN_END: "idle",
}


@dataclass
class SiteState:
    state: str = "idle"
    transcript: str | None = None
    intent: dict[str, Any] | None = None
    response: str | None = None
    muted: bool | None = None

    def apply(self, event: Event) -> list[str]:
        """Update from an event; returns the names of the retained topics that changed."""
        changed: list[str] = []
        data = event.data or {}
        new_state = STATE_AFTER.get(event.type)
        if event.type == EventType.STATE and data.get("state") is not None:
            new_state = str(data["state"])
        if new_state is not None and new_state != self.state:
            self.state = new_state
            changed.append("state")
        if event.type == EventType.TRANSCRIPT and (text := transcript_text(data)) is not None:
            self.transcript = text
            changed.append("transcript")
        elif event.type == EventType.INTENT and (intent := intent_dict(data)) is not None:
            self.intent = intent
            changed.append("intent")
        elif event.type == EventType.INTENT_NOT_RECOGNIZED:
            self.intent = {"name": None, "text": transcript_text(data) or "", "slots": {}}
            changed.append("intent")
        elif event.type == EventType.HANDLED and (speech := response_speech(data)) is not None:
            self.response = speech
            changed.append("response")
        elif event.type == EventType.MUTED and "muted" in data:
            self.muted = bool(data["muted"])
            changed.append("muted")
        return changed


def plain(value: Any) -> Any:
    """Dataclasses such as Transcript/Intent/Response as dicts; anything else unchanged."""
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else value


def transcript_text(data: dict[str, Any]) -> str | None:
    value = plain(data.get("transcript", data))
    if isinstance(value, str):
        return value
    text = value.get("text") if isinstance(value, dict) else None
    return str(text) if text is not None else None


def intent_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    value = plain(data.get("intent", data))
    if isinstance(value, str):
        return {"name": value, "slots": data.get("slots", {}), "text": data.get("text", "")}
    if isinstance(value, dict) and value.get("name"):
        return value
    return None


def response_speech(data: dict[str, Any]) -> str | None:
    value = plain(data.get("response", data))
    if isinstance(value, str):
        return value
    speech = value.get("speech") if isinstance(value, dict) else None
    return str(speech) if speech is not None else None
