"""Options of the ``esphome`` service: one ESPHome voice-assistant device per voiced site."""

from __future__ import annotations

import base64
import binascii
import hashlib
import ipaddress
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

LOOPBACK_NAMES = ("localhost",)


class DeviceOptions(BaseModel):
    """One site offered to Home Assistant as one ESPHome device (one port)."""

    model_config = ConfigDict(extra="forbid")
    site_id: str = Field(description="the voiced site (room) this device is")
    port: int = Field(
        ge=0, le=65535, description="the device's API port (ESPHome's is 6053; 0: any free one)"
    )
    name: str | None = Field(
        None, description="the ESPHome node name (lowercase, digits, -); default voiced-<site>"
    )
    friendly_name: str | None = Field(None, description="the name shown in Home Assistant")
    encryption_key: SecretStr | None = Field(
        None,
        description="the API's noise key, 32 bytes in base64 (as ESPHome's `api: encryption: "
        "key:`; make one with `openssl rand -base64 32`): Home Assistant asks for it when it "
        "adds the device",
    )
    pipeline: Literal["voiced", "home-assistant"] = Field(
        "voiced",
        description="who answers after the wake word: voiced (as without Home Assistant) or "
        "Home Assistant (the audio is streamed to its Assist pipeline)",
    )

    @field_validator("encryption_key")
    @classmethod
    def _key(cls, key: SecretStr | None) -> SecretStr | None:
        if key is not None:
            decode_key(key.get_secret_value())
        return key

    def key(self) -> bytes | None:
        """The noise key's 32 bytes, or None for a plaintext device."""
        return decode_key(self.encryption_key.get_secret_value()) if self.encryption_key else None

    def node_name(self) -> str:
        name = self.name or f"voiced-{self.site_id}"
        return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "voiced"

    def mac_address(self) -> str:
        """A stable, locally administered MAC made from the node name (Home Assistant keys
        the device by it)."""
        digest = bytearray(hashlib.sha256(self.node_name().encode()).digest()[:6])
        digest[0] = (digest[0] | 0x02) & 0xFE
        return ":".join(f"{b:02X}" for b in digest)


class EsphomeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    host: str = Field(
        "127.0.0.1",
        description="address the devices listen on; plaintext API: loopback unless "
        "allow_plaintext_network",
    )
    devices: list[DeviceOptions] = Field(
        default_factory=list, description="the sites offered as devices, each on its own port"
    )
    allow_plaintext_network: bool = Field(
        False,
        description="listen beyond loopback without encryption (anyone on the network can "
        "then use the microphone and speaker)",
    )
    zeroconf: bool = Field(
        False,
        description="announce the devices over mDNS (_esphomelib._tcp) on the interface they "
        "listen on, so Home Assistant discovers them",
    )
    max_connections: int = Field(4, ge=1, le=64, description="open connections per device")
    max_frame_bytes: int = Field(
        256 << 10, ge=1024, le=16 << 20, description="the largest frame a client may send"
    )
    read_seconds: float = Field(10.0, gt=0, description="time for the rest of a frame")
    idle_seconds: float = Field(
        90.0, gt=0, description="a connection that sends nothing this long is closed"
    )
    max_media_bytes: int = Field(
        32 << 20, ge=1 << 16, description="the largest announcement file fetched"
    )
    media_seconds: float = Field(30.0, gt=0, description="time to fetch an announcement")

    @model_validator(mode="after")
    def _checked(self) -> EsphomeOptions:
        plaintext = [d.site_id for d in self.devices if d.encryption_key is None]
        if plaintext and not self.allow_plaintext_network and not _is_loopback(self.host):
            raise ValueError(
                f"host {self.host!r} is not loopback and the devices of {', '.join(plaintext)} "
                "have no encryption_key: anyone on the network could use their microphone; give "
                "each an encryption_key, keep 127.0.0.1, or set allow_plaintext_network = true"
            )
        ports = [d.port for d in self.devices if d.port]  # 0: any free one, each its own
        if len(set(ports)) != len(ports):
            raise ValueError("each device needs a port of its own")
        sites = [d.site_id for d in self.devices]
        if len(set(sites)) != len(sites):
            raise ValueError("each site can be one device only")
        return self


def _is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def decode_key(key: str) -> bytes:
    """A base64 noise key (as ``esphome`` writes it) as its 32 bytes; ValueError otherwise."""
    try:
        raw = base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the encryption key is not base64") from None
    if len(raw) != 32:
        raise ValueError(f"the encryption key is {len(raw)} bytes, not 32")
    return raw
