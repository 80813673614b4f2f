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
        )
