"""Per-site retained values: the core's ``state`` event mirrored, and each run's last results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voiced.api import events as ev
from voiced.api.events import Event, EventType


@dataclass
class SiteState:
    state: str = "idle"
    transcript: str | None = None
    intent: dict[str, Any] | None = None
    response: str | None = None
    speaker: str | None = None  # who spoke last (an enrolled name or "unknown"), when told
    muted: bool | None = None  # unknown until the core's first state event for the site

    def apply(self, event: Event) -> list[str]:
        """Update from an event; returns the names of the retained topics that changed.

        ``state`` and ``muted`` come only from the core's ``state`` event (the core derives
        them from the site's runs); the rest are the last transcript, intent and answer.
        """
        changed: list[str] = []
        if event.type == EventType.STATE:
            state = ev.State.from_event(event)
            if state.state != self.state:
                self.state = state.state
                changed.append("state")
            if state.muted != self.muted:
                self.muted = bool(state.muted)
                changed.append("muted")
        elif event.type == EventType.TRANSCRIPT:
            transcript = ev.Transcript.from_event(event)
            self.transcript = transcript.text
            changed.append("transcript")
            if transcript.speaker is not None:
                self.speaker = transcript.speaker
                changed.append("speaker")
        elif event.type == EventType.INTENT:
            intent = ev.Intent.from_event(event)
            self.intent = {"name": intent.name, "text": intent.text, "slots": intent.slots}
            changed.append("intent")
        elif event.type == EventType.INTENT_NOT_RECOGNIZED:
            text = ev.IntentNotRecognized.from_event(event).text
            self.intent = {"name": None, "text": text, "slots": {}}
            changed.append("intent")
        elif event.type == EventType.HANDLED:
            self.response = ev.Handled.from_event(event).speech
            changed.append("response")
        elif event.type == EventType.INTENT_REFUSED:  # answered instead of handled
            self.response = ev.IntentRefused.from_event(event).speech
            changed.append("response")
        return changed
