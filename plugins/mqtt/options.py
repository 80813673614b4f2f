"""Options of the ``mqtt`` service: where the broker is, how to log in, what to publish."""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

SCHEMES = {"mqtt": False, "tcp": False, "mqtts": True, "ssl": True, "tls": True}


class TlsOptions(BaseModel):
    """TLS to the broker; the server certificate is verified unless ``insecure`` is set."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    ca_file: Path | None = Field(None, description="CA bundle (PEM); the system CAs when unset")
    certfile: Path | None = Field(None, description="client certificate (PEM)")
    keyfile: Path | None = Field(None, description="client private key (PEM)")
    insecure: bool = Field(False, description="skip certificate and host name verification")

    @model_validator(mode="after")
    def _files(self) -> TlsOptions:
        if self.keyfile and not self.certfile:
            raise ValueError("tls.keyfile needs tls.certfile (the client certificate)")
        for name in ("ca_file", "certfile", "keyfile"):
            path = getattr(self, name)
            if path is not None and not path.is_file():
                raise ValueError(f"tls.{name}: file not found: {path}")
        return self

    def context(self) -> ssl.SSLContext:
        """The SSL context the client (and the connection diagnosis) uses."""
        ctx = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
        if self.certfile:
            ctx.load_cert_chain(str(self.certfile), str(self.keyfile) if self.keyfile else None)
        if self.insecure:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        return ctx


class MqttOptions(BaseModel):
    """``[stages.service.mqtt]``: broker, login, TLS, topics and Home Assistant discovery."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = Field(None, description="mqtt://user:pass@host:1883 or mqtts://host:8883")
    host: str | None = None
    port: int | None = Field(None, ge=1, le=65535)
    client_id: str | None = None
    username: str | None = None
    password: SecretStr | None = None
    tls: TlsOptions = TlsOptions()
    keepalive: int = Field(60, ge=5, le=3600)
    protocol: Literal["auto", "5", "3.1.1"] = "auto"
    qos: int = Field(1, ge=0, le=2)
    prefix: str = "voiced"
    site_id: str | None = Field(None, description="defaults to the daemon's site_id")
    queue_size: int = Field(1000, ge=1, description="events kept while the broker is away")
    max_inflight: int = Field(20, ge=1, le=1000)
    reconnect_min_delay: float = Field(1.0, gt=0)
    reconnect_max_delay: float = Field(60.0, gt=0)
    flush_timeout: float = Field(5.0, ge=0, description="seconds stop() waits for the queue")
    publish_audio: bool = Field(False, description="also publish raw audio found in events")
    hermes: bool = False
    discovery: bool = True
    discovery_prefix: str = "homeassistant"
    device_id: str | None = Field(None, description="Home Assistant device id; voiced_<site>")
    device_name: str | None = None
    embedded: Literal["auto", "off"] = "auto"
    embedded_port: int = Field(1883, ge=1, le=65535)

    @field_validator("prefix", "discovery_prefix")
    @classmethod
    def _topic_prefix(cls, value: str) -> str:
        value = value.strip("/")
        if not value or any(c in value for c in "+#"):
            raise ValueError("must be a non-empty topic without + or #")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in SCHEMES or not parts.hostname:
                raise ValueError("must look like mqtt://host:1883 or mqtts://host:8883")
        return value

    @property
    def broker_configured(self) -> bool:
        return bool(self.url or self.host)

    def endpoint(self) -> Endpoint:
        """Host, port, TLS and login from ``url`` and/or the separate keys (keys win)."""
        host, port, use_tls = "127.0.0.1", None, self.tls.enabled
        username = self.username
        password = self.password.get_secret_value() if self.password else None
        if self.url:
            parts = urlsplit(self.url)
            host = parts.hostname or host
            port = parts.port
            use_tls = use_tls or SCHEMES[parts.scheme]
            username = username or (unquote(parts.username) if parts.username else None)
            if password is None and parts.password:
                password = unquote(parts.password)
        if self.host:
            host = self.host
        if self.port:
            port = self.port
        if port is None:
            port = 8883 if use_tls else 1883
        return Endpoint(host, port, use_tls, username, password)

    def site(self, default: str = "default") -> str:
        return self.site_id or default

    def device(self, site_id: str) -> tuple[str, str]:
        """(device id, device name) for Home Assistant."""
        ident = self.device_id or "voiced_" + re.sub(r"[^a-zA-Z0-9_-]", "_", site_id)
        return ident, self.device_name or f"voiced {site_id}"


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    tls: bool
    username: str | None
    password: str | None

    def __str__(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://{self.host}:{self.port}"
