"""Hermes (Rhasspy 2.5) topics, so Rhasspy-era Node-RED flows keep working."""

from __future__ import annotations

import json
from typing import Any

from voiced.events import Event, EventType

from .state import intent_dict, plain, transcript_text

TTS_SAY = "hermes/tts/say"
END_REASONS = {
    "done": "nominal",
    "cancelled": "abortedByUser",
    "error": "error",
    "no-speech": "timeout",
    "timeout": "timeout",
    "not-recognized": "intentNotRecognized",
}


def hermes_messages(event: Event) -> list[tuple[str, dict[str, Any]]]:
    """The Hermes ``(topic, payload)`` pairs one voiced event maps to (often none)."""
    data = event.data or {}
    base = {"siteId": event.site_id, "sessionId": event.run_id}
    if event.type == EventType.RUN_START:
        return [("hermes/dialogueManager/sessionStarted", {**base, "customData": None})]
    if event.type == EventType.RUN_END:
        reason = END_REASONS.get(str(data.get("reason", "done")), "nominal")
        return [
            (
                "hermes/dialogueManager/sessionEnded",
                {**base, "customData": None, "termination": {"reason": reason}},
            )
        ]
    if event.type == EventType.WAKE:
        model = str(data.get("name") or data.get("wake_word") or data.get("model") or "default")
        payload = {
            **base,
            "modelId": model,
            "modelVersion": "",
            "modelType": "personal",
            "currentSensitivity": float(data.get("score", 1.0) or 1.0),
            "sendAudioCaptured": None,
            "lang": data.get("language"),
        }
        return [(f"hermes/hotword/{_topic_safe(model)}/detected", payload)]
    if event.type == EventType.TRANSCRIPT:
        transcript = plain(data.get("transcript", data))
        if not isinstance(transcript, dict):
            transcript = data
        payload = {
            **base,
            "text": transcript_text(data) or "",
            "likelihood": float(transcript.get("confidence", transcript.get("likelihood", 1.0))),
            "seconds": float(transcript.get("audio_seconds", transcript.get("seconds", 0.0))),
            "wakewordId": None,
            "asrTokens": None,
            "lang": transcript.get("language"),
        }
        return [("hermes/asr/textCaptured", payload)]
    if event.type == EventType.INTENT and (intent := intent_dict(data)) is not None:
        name = str(intent["name"])
        text = str(intent.get("text") or data.get("text") or "")
        payload = {
            **base,
            "input": text,
            "rawInput": text,
            "intent": {
                "intentName": name,
                "confidenceScore": float(intent.get("confidence", 1.0)),
            },
            "slots": [_slot(k, v) for k, v in (intent.get("slots") or {}).items()],
            "customData": None,
            "asrTokens": [],
            "asrConfidence": None,
            "wakewordId": None,
            "lang": intent.get("language"),
        }
        return [(f"hermes/nlu/intent/{_topic_safe(name)}", payload)]
    if event.type == EventType.INTENT_NOT_RECOGNIZED:
        text = transcript_text(data) or ""
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
