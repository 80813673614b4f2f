"""A Home Assistant HTTP reply read within a size and a time bound."""

from __future__ import annotations

import time
from typing import Protocol

CHUNK = 64 * 1024


class Reply(Protocol):
    """What ``urllib`` hands back (a response, or an HTTPError carrying one)."""

    def getheader(self, name: str, default: str | None = None) -> str | None: ...

    def read1(self, amt: int = -1) -> bytes: ...


class ReplyTooLarge(ValueError):
    """A reply longer than the configured bound."""


def read_reply(reply: Reply, max_bytes: int, seconds: float) -> bytes:
    """The body of ``reply``: at most ``max_bytes`` (announced or streamed), within ``seconds``
    in all (each socket read is bounded by the request's own timeout)."""
    announced = reply.getheader("Content-Length")
    if announced and announced.isdigit() and int(announced) > max_bytes:
        raise ReplyTooLarge(f"Home Assistant's reply announces {announced} bytes (max {max_bytes})")
    deadline = time.monotonic() + seconds
    body = bytearray()
    while chunk := reply.read1(CHUNK):
        body += chunk
        if len(body) > max_bytes:
            raise ReplyTooLarge(f"Home Assistant's reply is longer than {max_bytes} bytes")
        if time.monotonic() > deadline:
            raise TimeoutError(f"Home Assistant's reply took longer than {seconds:g} s")
    return bytes(body)
