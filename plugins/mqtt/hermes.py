"""Hermes (Rhasspy 2.5) topics, so Rhasspy-era Node-RED flows keep working."""

from __future__ import annotations

import json
from typing import Any

from voiced.api import events as ev
from voiced.api.events import Event, EventType

TTS_SAY = "hermes/tts/say"
# The core's run-end reasons (voiced/events.py RunEnd) as Hermes session terminations.
END_REASONS = {
    "done": "nominal",
    "cancelled": "abortedByUser",
    "barge-in": "abortedByUser",
    "wake-again": "abortedByUser",
    "muted": "abortedByUser",
    "error": "error",
    "dropped": "error",
    "no-speech": "timeout",
    "no-speech-timeout": "timeout",
}


def hermes_messages(event: Event) -> list[tuple[str, dict[str, Any]]]:
    """The Hermes ``(topic, payload)`` pairs one voiced event maps to (often none)."""
    base = {"siteId": event.site_id, "sessionId": event.run_id}
    if event.type == EventType.RUN_START:
        return [("hermes/dialogueManager/sessionStarted", {**base, "customData": None})]
    if event.type == EventType.RUN_END:
        reason = END_REASONS.get(ev.RunEnd.from_event(event).reason, "nominal")
        return [
            (
                "hermes/dialogueManager/sessionEnded",
                {**base, "customData": None, "termination": {"reason": reason}},
            )
        ]
    if event.type == EventType.WAKE:
        wake = ev.Wake.from_event(event)
        payload = {
            **base,
            "modelId": wake.name,
            "modelVersion": "",
            "modelType": "personal",
            "currentSensitivity": float(wake.score),
            "sendAudioCaptured": None,
            "lang": None,
        }
        return [(f"hermes/hotword/{_topic_safe(wake.name)}/detected", payload)]
    if event.type == EventType.TRANSCRIPT:
        transcript = ev.Transcript.from_event(event)
        payload = {
            **base,
            "text": transcript.text,
            "likelihood": 1.0,  # Whisper gives no utterance confidence
            "seconds": float(transcript.audio_seconds),
            "wakewordId": None,
            "asrTokens": None,
            "lang": transcript.language,
        }
        return [("hermes/asr/textCaptured", payload)]
    if event.type == EventType.INTENT:
        intent = ev.Intent.from_event(event)
        payload = {
            **base,
            "input": intent.text,
            "rawInput": intent.text,
            "intent": {"intentName": intent.name, "confidenceScore": float(intent.confidence)},
            "slots": [_slot(k, v) for k, v in intent.slots.items()],
            "customData": None,
            "asrTokens": [],
            "asrConfidence": None,
            "wakewordId": None,
            "lang": None,
        }
        return [(f"hermes/nlu/intent/{_topic_safe(intent.name)}", payload)]
    if event.type == EventType.INTENT_NOT_RECOGNIZED:
        text = ev.IntentNotRecognized.from_event(event).text
        return [("hermes/nlu/intentNotRecognized", {**base, "input": text, "customData": None})]
    if event.type == EventType.TTS_END:
        return [("hermes/tts/sayFinished", {**base, "id": event.run_id})]
    return []


def _slot(name: str, value: Any) -> dict[str, Any]:
    raw = value
    if isinstance(value, dict):
        raw = value.get("text", value.get("raw", value.get("value")))
        value = value.get("value", raw)
    return {
        "entity": name,
        "slotName": name,
        "rawValue": "" if raw is None else str(raw),
        "value": {"kind": "Unknown", "value": value},
        "confidence": 1.0,
        "range": None,
    }


def _topic_safe(name: str) -> str:
    return "".join("_" if c in "+#/" else c for c in name) or "default"


def parse_tts_say(payload: bytes) -> tuple[str, str | None]:
    """``(text, siteId)`` from a ``hermes/tts/say`` payload; ValueError when malformed."""
    try:
        data = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("text"), str) or not data["text"]:
        raise ValueError('expected {"text": "...", "siteId": "..."}')
    site = data.get("siteId")
    return data["text"], str(site) if site else None
