"""Home Assistant MQTT discovery, device based: one retained config for all entities."""

from __future__ import annotations

from typing import Any

import voiced

from .topics import Topics

ORIGIN = {"name": "voiced", "sw": voiced.__version__}


def device_config(topics: Topics, site_id: str, device_id: str, name: str) -> dict[str, Any]:
    """The payload for ``<discovery_prefix>/device/<device_id>/config``."""

    def uid(key: str) -> str:
        return f"{device_id}_{key}"

    components: dict[str, dict[str, Any]] = {
        "state": {
            "p": "sensor",
            "name": "State",
            "unique_id": uid("state"),
            "state_topic": topics.state(site_id, "state"),
            "device_class": "enum",
            "options": ["idle", "listening", "thinking", "speaking"],
            "icon": "mdi:account-voice",
        },
        "transcript": {
            "p": "sensor",
            "name": "Last transcript",
            "unique_id": uid("transcript"),
            "state_topic": topics.state(site_id, "transcript"),
            "value_template": "{{ value[:255] }}",
            "icon": "mdi:text-recognition",
        },
        "intent": {
            "p": "sensor",
            "name": "Last intent",
            "unique_id": uid("intent"),
            "state_topic": topics.state(site_id, "intent"),
            "value_template": "{{ value_json.name or 'not recognized' }}",
            "json_attributes_topic": topics.state(site_id, "intent"),
            "icon": "mdi:head-lightbulb",
        },
        "response": {
            "p": "sensor",
            "name": "Last response",
            "unique_id": uid("response"),
            "state_topic": topics.state(site_id, "response"),
            "value_template": "{{ value[:255] }}",
            "icon": "mdi:message-reply-text",
        },
        "speaker": {
            "p": "sensor",
            "name": "Last speaker",
            "unique_id": uid("speaker"),
            "state_topic": topics.state(site_id, "speaker"),
            "icon": "mdi:account-voice",
        },
        "enroll": {
            "p": "text",
            "name": "Enroll speaker",
            "unique_id": uid("enroll"),
            "command_topic": topics.command(site_id, "enroll"),
            "mode": "text",
            "min": 0,
            "max": 40,
            "icon": "mdi:account-plus",
        },
        "mute": {
            "p": "switch",
            "name": "Mute",
            "unique_id": uid("mute"),
            "command_topic": topics.command(site_id, "mute"),
            "state_topic": topics.state(site_id, "muted"),
            "payload_on": "ON",
            "payload_off": "OFF",
            "icon": "mdi:microphone-off",
        },
        "listen": {
            "p": "button",
            "name": "Listen",
            "unique_id": uid("listen"),
            "command_topic": topics.command(site_id, "listen"),
            "payload_press": "PRESS",
            "icon": "mdi:microphone",
        },
        "say": {
            "p": "text",
            "name": "Say",
            "unique_id": uid("say"),
            "command_topic": topics.command(site_id, "say"),
            "mode": "text",
            "min": 0,
            "max": 255,
            "icon": "mdi:bullhorn",
        },
    }
    return {
        "dev": {
            "ids": [device_id],
            "name": name,
            "mf": "voiced",
            "mdl": "voice pipeline",
            "sw": ORIGIN["sw"],
        },
        "o": ORIGIN,
        "availability_topic": topics.status,
        "payload_available": "online",
        "payload_not_available": "offline",
        "qos": 1,
        "cmps": components,
    }
