"""What setup has learned, question by question; the config file is written from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class HomeAssistantAnswer:
    """Home Assistant's URL and where its token is kept."""

    url: str
    token: str
    version: str = ""
    areas: int = 0
    entities: int = 0
    broker: str | None = None  # the MQTT broker Home Assistant uses, when it says


@dataclass
class MqttAnswer:
    """The broker voiced publishes on; ``host`` None: voiced's own embedded broker."""

    host: str | None = None
    port: int = 1883
    username: str | None = None
    password: str | None = None
    tls: bool = False
    ca_file: str | None = None


@dataclass
class Answers:
    """Everything the config file is written from."""

    config_path: Path
    language: str = "en"
    asr_model: str = "bundled:tiny.en"
    asr_engines: list[str] = field(default_factory=lambda: ["whisper-ctranslate2"])
    microphone: str | None = None  # None: no local microphone (satellites only)
    speaker: str | None = None
    wake_words: list[str] = field(default_factory=lambda: ["okay_nabu"])
    home_assistant: HomeAssistantAnswer | None = None
    mqtt: MqttAnswer = field(default_factory=MqttAnswer)
    wyoming_uri: str | None = None  # offered to Home Assistant when set
    esphome: bool = False
    site_id: str = "default"
    token_env_file: Path | None = None
    """Set for the system service's config: the token goes in this systemd EnvironmentFile
    (read by systemd as root) instead of a token file the service's own user could not read."""
