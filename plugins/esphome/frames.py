"""The ESPHome native API's plaintext framing, read with bounds.

A frame is ``0x00``, a varint length, a varint message type, then ``length`` bytes of a
protobuf message. Reading refuses, from the header and before any payload is read: a first
byte other than ``0x00`` (0x01 is a client that wants noise encryption), a length over the
cap, a varint of more than five bytes, and a message type the API does not know.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aioesphomeapi.core import MESSAGE_TYPE_TO_PROTO
from google.protobuf.message import DecodeError, Message

MESSAGE_TYPE_OF: dict[type[Message], int] = {cls: t for t, cls in MESSAGE_TYPE_TO_PROTO.items()}
MAX_VARINT_BYTES = 5  # 35 bits: more than any length the cap allows


class FrameError(ValueError):
    """A frame this server will not read: the connection gets an error and is dropped."""


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode(message: Message) -> bytes:
    """One message as a plaintext frame."""
    data = message.SerializeToString()
    return b"\x00" + _varint(len(data)) + _varint(MESSAGE_TYPE_OF[type(message)]) + data


class FrameReader:
    """Reads messages from a stream: at most ``max_bytes`` per frame, the rest of a frame
    within ``read_seconds`` once its first byte arrived."""

    ready = True  # no handshake

    def __init__(self, reader: asyncio.StreamReader, max_bytes: int, read_seconds: float) -> None:
        self.reader = reader
        self.max_bytes = max_bytes
        self.read_seconds = read_seconds

    async def handshake(self, name: str, mac: str) -> None:
        """Plaintext has none."""

    def encode(self, *messages: Message) -> bytes:
        return b"".join(encode(m) for m in messages)

    async def read(self) -> Message | None:
        """The next message, or None at the end of the stream (between frames)."""
        first = await self.reader.read(1)
        if not first:
            return None
        try:
            async with asyncio.timeout(self.read_seconds):
                return await self._rest(first[0])
        except TimeoutError:
            raise FrameError(f"a frame was not completed within {self.read_seconds:g} s") from None

    async def _rest(self, preamble: int) -> Message:
        if preamble == 0x01:
            raise FrameError("the client wants noise encryption; this device is plaintext")
        if preamble != 0x00:
            raise FrameError(f"not an ESPHome API frame (first byte 0x{preamble:02x})")
        length = await self._read_varint("length")
        if length > self.max_bytes:
            raise FrameError(f"a frame of {length} bytes is over the cap of {self.max_bytes}")
        kind = await self._read_varint("message type")
        cls: Any = MESSAGE_TYPE_TO_PROTO.get(kind)
        if cls is None:
            raise FrameError(f"unknown message type {kind}")
        data = await self.reader.readexactly(length) if length else b""
        try:
            return cls.FromString(data)
        except DecodeError as exc:
            raise FrameError(
                f"message type {kind} ({cls.__name__}) does not decode: {exc}"
            ) from None

    async def _read_varint(self, what: str) -> int:
        value = 0
        for index in range(MAX_VARINT_BYTES):
            byte = (await self.reader.readexactly(1))[0]
            value |= (byte & 0x7F) << (7 * index)
            if not byte & 0x80:
                return value
        raise FrameError(f"the frame's {what} is longer than {MAX_VARINT_BYTES} bytes")
