"""Topic names under the configured prefix, in one place."""

from __future__ import annotations

import re
from dataclasses import dataclass

COMMANDS = ("say", "listen", "mute", "cancel")
# MQTT wildcards, the level separator and NUL must never come from a site's name.
_NOT_IN_A_LEVEL = re.compile(r"[#+/\x00]")


def topic_level(name: str) -> str:
    """A site name as one safe topic level ("kids/room#2" -> "kids_room_2")."""
    return _NOT_IN_A_LEVEL.sub("_", name) or "_"


@dataclass(frozen=True)
class Topics:
    prefix: str = "voiced"
    discovery_prefix: str = "homeassistant"

    @property
    def status(self) -> str:
        return f"{self.prefix}/status"

    def event(self, site_id: str, event_type: str) -> str:
        return f"{self.prefix}/{topic_level(site_id)}/event/{event_type}"

    def audio(self, site_id: str, event_type: str) -> str:
        return f"{self.prefix}/{topic_level(site_id)}/audio/{event_type}"

    def state(self, site_id: str, name: str = "state") -> str:
        """Retained: ``state``, ``transcript``, ``intent``, ``response``, ``speaker``, ``muted``."""
        return f"{self.prefix}/{topic_level(site_id)}/{name}"

    def command(self, site_id: str, name: str) -> str:
        return f"{self.prefix}/{topic_level(site_id)}/command/{name}"

    def intent(self, site_id: str, intent_name: str) -> str:
        return f"{self.prefix}/{topic_level(site_id)}/intent/{topic_level(intent_name)}"

    @property
    def command_filter(self) -> str:
        return f"{self.prefix}/+/command/+"

    def parse_command(self, topic: str) -> tuple[str, str] | None:
        """``(site_id, command)`` for a command topic, else None."""
        parts = topic.split("/")
        head = self.prefix.split("/")
        if len(parts) != len(head) + 3 or parts[: len(head)] != head:
            return None
        site_id, word, command = parts[len(head) :]
        return (site_id, command) if word == "command" and site_id else None

    @property
    def ha_status(self) -> str:
        return f"{self.discovery_prefix}/status"

    def device_config(self, device_id: str) -> str:
        return f"{self.discovery_prefix}/device/{device_id}/config"
