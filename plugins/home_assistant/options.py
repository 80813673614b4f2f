"""How voiced reaches Home Assistant: its URL and a long-lived access token."""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .redaction import protect

TOKEN_ENV = "HOME_ASSISTANT_TOKEN"


class HomeAssistantConfigError(ValueError):
    """Connection settings that cannot work; the message says which option to fix."""


class HomeAssistantConnection(BaseModel):
    """``url`` and a token (``token``, ``token_file`` or $HOME_ASSISTANT_TOKEN)."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        "http://127.0.0.1:8123", description="Home Assistant's base URL (http:// or https://)"
    )
    token: str | None = Field(
        None, description="a long-lived access token (HA profile > Security); prefer token_file"
    )
    token_file: str | None = Field(None, description="a file holding the token (one line)")
    ca_file: str | None = Field(
        None, description="CA certificate for an https URL signed by your own CA"
    )
    timeout: float = Field(
        10.0,
        gt=0,
        description="seconds one request may take: a WebSocket command's answer, each step of "
        "the connection and auth, an HTTP intent request with its whole reply",
    )
    max_message_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1024,
        description="the longest WebSocket message taken from Home Assistant (a big home's "
        "registries come in one message: 50,000 entities are ~25 MB); a longer one closes "
        "the connection, which is then made again",
    )
    max_reply_bytes: int = Field(
        1024 * 1024,
        ge=1024,
        description="the longest HTTP reply taken from Home Assistant (an intent's answer is a "
        "few KB); a longer one is refused as an error",
    )
    ping_seconds: float = Field(
        20.0,
        gt=0,
        description="a WebSocket ping this often; a peer that does not answer one within as "
        "long is taken as gone and the connection made again",
    )

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError("use http://HOST:PORT or https://HOST:PORT (Home Assistant's URL)")
        return value.rstrip("/")

    def access_token(self) -> str:
        """The token from the option, the token file or the environment, in that order."""
        token = self._token()
        protect(token)  # never in a log record, whoever logs it
        return token

    def _token(self) -> str:
        if self.token:
            return self.token.strip()
        if self.token_file:
            path = Path(self.token_file).expanduser()
            try:
                token = path.read_text(encoding="utf-8").strip()
            except OSError as exc:
                raise HomeAssistantConfigError(f"token_file {path}: {exc.strerror}") from None
            if not token:
                raise HomeAssistantConfigError(f"token_file {path} is empty")
            return token
        token = os.environ.get(TOKEN_ENV, "").strip()
        if token:
            return token
        raise HomeAssistantConfigError(
            "no Home Assistant token: set token_file (or token, or $HOME_ASSISTANT_TOKEN) to a "
            "long-lived access token made in Home Assistant (your profile > Security)"
        )

    @property
    def websocket_url(self) -> str:
        return f"ws{self.url[4:]}/api/websocket"  # http -> ws, https -> wss

    def ssl_context(self) -> ssl.SSLContext | None:
        """Certificate-verifying TLS for https (the system CAs, or ``ca_file``)."""
        if not self.url.startswith("https"):
            return None
        return ssl.create_default_context(cafile=self.ca_file)
