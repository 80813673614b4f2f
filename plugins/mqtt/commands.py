"""Command payloads from the broker: plain text or JSON, checked before anything runs."""

from __future__ import annotations

import json
from typing import Any

TRUE = {"on", "true", "1", "yes", "mute", "muted"}
FALSE = {"off", "false", "0", "no", "unmute", "unmuted"}


class BadCommand(ValueError):
    """A command payload that cannot be understood."""


def _decode(payload: bytes) -> tuple[str, Any]:
    try:
        text = payload.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise BadCommand("payload is not UTF-8 text") from None
    try:
        return text, json.loads(text) if text[:1] in '{["' and text else None
    except RecursionError:
        raise BadCommand("payload JSON is nested too deeply") from None
    except json.JSONDecodeError as exc:
        if text[:1] == "{":
            raise BadCommand(f"payload looks like JSON but is not: {exc}") from None
        return text, None


def parse_say(payload: bytes) -> str:
    """Text to speak: the payload itself or ``{"text": "..."}``."""
    text, data = _decode(payload)
    if isinstance(data, dict):
        value = data.get("text")
        if not isinstance(value, str):
            raise BadCommand('JSON say command needs a "text" string')
        text = value.strip()
    elif isinstance(data, str):
        text = data.strip()
    elif data is not None:
        raise BadCommand('say expects text or {"text": "..."}')
    if not text:
        raise BadCommand("say needs some text")
    return text


def parse_name(payload: bytes) -> str:
    """A person's name (enroll, forget-speaker): the payload itself or ``{"name": "..."}``."""
    text, data = _decode(payload)
    if isinstance(data, dict):
        data = data.get("name")
        if not isinstance(data, str):
            raise BadCommand('JSON command needs a "name" string')
    if isinstance(data, str):
        text = data
    elif data is not None:
        raise BadCommand('expects a name or {"name": "..."}')
    text = text.strip()
    if not text or len(text) > 40:
        raise BadCommand("needs a name of 1-40 characters")
    return text


def parse_mute(payload: bytes) -> bool:
    """on/off/true/false/1/0 (any case), a JSON boolean, or ``{"muted": bool}``."""
    text, data = _decode(payload)
    if isinstance(data, dict):
        data = data.get("muted", data.get("mute", data.get("state")))
    if isinstance(data, bool):
        return data
    if isinstance(data, str):
        text = data
    word = text.strip().lower()
    if word in TRUE:
        return True
    if word in FALSE:
        return False
    raise BadCommand(f"mute expects on/off, true/false or 1/0, got {text[:40]!r}")
