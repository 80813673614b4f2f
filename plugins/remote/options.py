"""Options shared by every remote Wyoming stage: where it is and how long to wait for it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .peer import Address, WyomingPeer


class RemoteOptions(BaseModel):
    """``[stages.<kind>."wyoming#NAME"]``: a Wyoming service on another machine (or port)."""

    model_config = ConfigDict(extra="forbid")

    uri: str = Field(description="tcp://HOST:PORT of the Wyoming service, e.g. tcp://gpu-box:10300")
    connect_timeout: float = Field(2.0, gt=0, description="seconds to wait for the TCP connect")
    timeout: float = Field(
        15.0, gt=0, description="seconds one request may take; slower hands over to the next engine"
    )
    retry_seconds: float = Field(
        5.0, gt=0, description="after a failed connect, calls fail at once for this long"
    )
    max_retry_seconds: float = Field(
        60.0, gt=0, description="the longest rest: retry_seconds doubles per failure in a row"
    )
    max_event_bytes: int = Field(
        1 << 20,
        ge=4096,
        le=64 << 20,
        description="data + payload one event of the service may declare (checked from its "
        "header, as the Wyoming server checks its clients)",
    )
    max_answer_bytes: int = Field(
        64 << 20,
        ge=1 << 16,
        description="all the payload of one answer (a TTS sentence's audio); more is refused",
    )

    @field_validator("uri")
    @classmethod
    def _uri(cls, value: str) -> str:
        Address.parse(value)
        return value

    def peer(self) -> WyomingPeer:
        """The connection to the service these options name, with their timeouts."""
        return WyomingPeer(
            self.uri,
            connect_timeout=self.connect_timeout,
            timeout=self.timeout,
            retry_seconds=self.retry_seconds,
            max_retry_seconds=self.max_retry_seconds,
            max_event_bytes=self.max_event_bytes,
            max_answer_bytes=self.max_answer_bytes,
        )
