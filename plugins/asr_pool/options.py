"""Options of the ASR worker pool, and the rule that audio only crosses an authenticated
broker connection."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from voiced_plugins.mqtt.options import MqttOptions

log = logging.getLogger(__name__)


class PoolConfigError(ValueError):
    """The pool cannot start as configured (no broker, an anonymous connection)."""


class PoolOptions(BaseModel):
    """``[stages.asr.mqtt-pool]``: shared by the front end and ``voiced worker``."""

    model_config = ConfigDict(extra="forbid")

    broker: MqttOptions | None = Field(
        None, description="the broker; default: the [stages.service.mqtt] settings"
    )
    group: str = Field("voiced-asr", description="name of the pool (said in logs and doctor)")
    prefix: str = Field("voiced/asr-pool", description="topic prefix of jobs, replies, workers")
    timeout: float = Field(10.0, gt=0, description="deadline of one utterance, in seconds")
    max_audio_seconds: float = Field(
        30.0, gt=0, le=600, description="longest utterance a job carries; a longer one is refused"
    )
    max_reply_bytes: int = Field(
        65536, ge=1024, description="largest reply a front end takes from a worker"
    )
    max_packet_bytes: int = Field(
        64 * 1024 * 1024,
        ge=65536,
        description="largest MQTT packet either side takes from the broker (it drops larger)",
    )
    send_home: bool = Field(
        True,
        description="publish this home's grammar (sentences, area and device names) for the "
        "workers, so they recognize with it; false: workers transcribe without the home",
    )
    max_grammar_bytes: int = Field(
        4 * 1024 * 1024,
        ge=65536,
        le=64 * 1024 * 1024,
        description="largest home grammar message (compressed; 8x this decompressed)",
    )
    grammars_kept: int = Field(
        4, ge=1, le=64, description="home grammars a worker keeps built (one per front end home)"
    )
    resend_seconds: float | None = Field(
        None,
        description="no longer used (a job is sent again only when its worker goes offline); "
        "accepted so an older config still starts",
    )
    session_expiry: int = Field(
        300, ge=0, description="seconds the broker keeps a session (and its jobs) after a drop"
    )
    connect_seconds: float = Field(5.0, ge=0, description="start-up waits this long for the broker")
    allow_anonymous: bool = Field(
        False, description="allow audio over a broker connection without a login (trusted LAN)"
    )
    client_id: str | None = Field(
        None, description="stable MQTT client id (persistent session); default from the role"
    )

    @property
    def max_audio_bytes(self) -> int:
        """The audio cap in bytes of 16 kHz 16-bit mono PCM."""
        return int(self.max_audio_seconds * 32000)

    @field_validator("resend_seconds")
    @classmethod
    def _resend_seconds(cls, value: float | None) -> float | None:
        if value is not None:
            log.warning(
                "ASR pool: resend_seconds is no longer used (a job is sent again only when its "
                "worker goes offline); remove it from [stages.asr.mqtt-pool]"
            )
        return value

    @field_validator("group")
    @classmethod
    def _group(cls, value: str) -> str:
        if not value or any(c in value for c in "/+#"):
            raise ValueError("a pool group name is a shared-subscription group: no / + or #")
        return value

    @field_validator("prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        value = value.strip("/")
        if not value or any(c in value for c in "+#$"):
            raise ValueError("must be a non-empty topic without + # or $")
        return value

    def broker_options(self, settings: Any) -> MqttOptions:
        """The broker options, MQTT 5; PoolConfigError if unusable."""
        broker = self.broker
        if broker is None:
            raw = settings.stage_options("service", "mqtt") if settings is not None else {}
            broker = MqttOptions.model_validate(raw)
        if not broker.broker_configured:
            raise PoolConfigError(
                "the ASR pool needs a broker: set [stages.asr.mqtt-pool.broker] url (or "
                "[stages.service.mqtt] url), e.g. mqtts://user:pass@broker.lan:8883"
            )
        endpoint = broker.endpoint()
        if endpoint.username is None and not self.allow_anonymous:
            raise PoolConfigError(
                f"the ASR pool sends audio over the broker: {endpoint} needs a login "
                "(username/password; TLS recommended). On a trusted network set "
                "allow_anonymous = true in [stages.asr.mqtt-pool] to override"
            )
        if not endpoint.tls:
            log.warning(
                "ASR pool: audio crosses %s unencrypted; use mqtts:// (TLS) off this host",
                endpoint,
            )
        return broker.model_copy(update={"protocol": "5"})
