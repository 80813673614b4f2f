"""Reading Wyoming events with limits: a peer can't hold a connection with a half-sent event,
declare a payload bigger than any request needs, or crash its handler with a bad header."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from wyoming.event import Event


class ProtocolError(Exception):
    """A header voiced can't read; answered with a Wyoming ``error`` event, then closed."""


class IdleTimeout(Exception):
    """No event began within the idle limit."""


@dataclass(frozen=True)
class ReadLimits:
    idle_seconds: float | None  # waiting for the next event; None: forever (a satellite)
    read_seconds: float  # the rest of an event once its header line began
    max_event_bytes: int  # data + payload one header may declare


async def read_event(reader: asyncio.StreamReader, limits: ReadLimits) -> Event | None:
    """The next event, or None at the end of the stream."""
    try:
        first = await asyncio.wait_for(reader.read(1), limits.idle_seconds)
    except TimeoutError:
        raise IdleTimeout(f"no event for {limits.idle_seconds:g} s") from None
    if not first:
        return None
    try:
        line = first + await asyncio.wait_for(reader.readline(), limits.read_seconds)
        header = _header(line)
        data_length = _length(header, "data_length", limits.max_event_bytes)
        payload_length = _length(header, "payload_length", limits.max_event_bytes)
        if data_length + payload_length > limits.max_event_bytes:
            raise ProtocolError(
                f"event declares {data_length + payload_length} bytes, over the limit of "
                f"{limits.max_event_bytes} (max_event_bytes)"
            )
        data = header.get("data") or {}
        if not isinstance(data, dict):
            raise ProtocolError('"data" must be an object')
        if data_length:
            raw = await asyncio.wait_for(reader.readexactly(data_length), limits.read_seconds)
            extra = _json(raw, "data")
            if not isinstance(extra, dict):
                raise ProtocolError("the data block must be a JSON object")
            data = {**data, **extra}
        payload = None
        if payload_length:
            payload = await asyncio.wait_for(
                reader.readexactly(payload_length), limits.read_seconds
            )
    except TimeoutError:
        raise ProtocolError(
            f"an event was not complete after {limits.read_seconds:g} s (read_seconds)"
        ) from None
    except (asyncio.LimitOverrunError, ValueError):  # readline: a header line over the limit
        raise ProtocolError("an event header line is too long") from None
    except asyncio.IncompleteReadError:
        return None  # the peer left mid-event
    return Event(type=header["type"], data=data, payload=payload)


def _header(line: bytes) -> dict:
    header = _json(line, "header")
    if not isinstance(header, dict):
        raise ProtocolError("an event header must be a JSON object")
    if not isinstance(header.get("type"), str) or not header["type"]:
        raise ProtocolError('an event header needs a "type" string')
    return header


def _json(raw: bytes, what: str) -> object:
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise ProtocolError(f"malformed {what}: {type(exc).__name__}: {exc}") from None


def _length(header: dict, key: str, limit: int) -> int:
    value = header.get(key)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ProtocolError(f'"{key}" must be a non-negative integer, not {value!r}')
    if value > limit:
        raise ProtocolError(f'"{key}" of {value} bytes is over the limit of {limit} bytes')
    return value
