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


HEADER_LINE_BYTES = 1 << 16
"""The longest header line: asyncio's StreamReader limit, which ``start_server`` uses."""


@dataclass(frozen=True)
class Header:
    """An event's header line, checked: its type, inline data and the lengths it declares."""

    type: str
    data: dict
    data_length: int
    payload_length: int


def parse_header(line: bytes, max_event_bytes: int) -> Header:
    """The header of one event; ProtocolError when it is malformed or declares more than
    ``max_event_bytes`` of data + payload (checked before anything more is read)."""
    header = _header(line)
    data_length = _length(header, "data_length", max_event_bytes)
    payload_length = _length(header, "payload_length", max_event_bytes)
    if data_length + payload_length > max_event_bytes:
        raise ProtocolError(
            f"event declares {data_length + payload_length} bytes, over the limit of "
            f"{max_event_bytes} (max_event_bytes)"
        )
    data = header.get("data") or {}
    if not isinstance(data, dict):
        raise ProtocolError('"data" must be an object')
    return Header(header["type"], data, data_length, payload_length)


def complete(header: Header, raw_data: bytes | None, payload: bytes | None) -> Event:
    """The event of ``header`` with its data block (merged into the inline data) and payload."""
    data = header.data
    if raw_data:
        extra = _json(raw_data, "data")
        if not isinstance(extra, dict):
            raise ProtocolError("the data block must be a JSON object")
        data = {**data, **extra}
    return Event(type=header.type, data=data, payload=payload or None)


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
        header = parse_header(line, limits.max_event_bytes)
        raw_data = None
        if header.data_length:
            raw_data = await asyncio.wait_for(
                reader.readexactly(header.data_length), limits.read_seconds
            )
        payload = None
        if header.payload_length:
            payload = await asyncio.wait_for(
                reader.readexactly(header.payload_length), limits.read_seconds
            )
    except TimeoutError:
        raise ProtocolError(
            f"an event was not complete after {limits.read_seconds:g} s (read_seconds)"
        ) from None
    except (asyncio.LimitOverrunError, ValueError):  # readline: a header line over the limit
        raise ProtocolError("an event header line is too long") from None
    except asyncio.IncompleteReadError:
        return None  # the peer left mid-event
    return complete(header, raw_data, payload)


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
