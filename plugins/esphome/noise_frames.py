"""The ESPHome native API's noise-encrypted framing, server side (Noise_NNpsk0_25519_
ChaChaPoly_SHA256 with the device's 32-byte key, as ESPHome firmware speaks it).

A frame is ``0x01``, a 2-byte big-endian length, then the payload. The client opens with an
empty frame (its hello) and a handshake frame (``0x00`` + the first noise message); the device
answers with its hello (``0x01`` + name + ``\\0`` + MAC + ``\\0``) and a handshake frame
(``0x00`` + the second noise message), or a refusal (``0x01`` + a reason) and closes. After
that each frame is one encrypted message: 2-byte type, 2-byte length, the protobuf bytes.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aioesphomeapi.core import MESSAGE_TYPE_TO_PROTO
from cryptography.exceptions import InvalidTag
from google.protobuf.message import DecodeError, Message
from noise.connection import NoiseConnection
from noise.exceptions import NoiseInvalidMessage, NoiseValueError

from .frames import MESSAGE_TYPE_OF, FrameError

PROTOCOL = b"Noise_NNpsk0_25519_ChaChaPoly_SHA256"
PROLOGUE = b"NoiseAPIInit\x00\x00"  # the prologue, then the client hello's length (it is empty)
MAC_FAILURE = "Handshake MAC failure"  # the words aioesphomeapi reads as a wrong key
TAG_BYTES = 16


def _frame(payload: bytes) -> bytes:
    return bytes((0x01, len(payload) >> 8, len(payload) & 0xFF)) + payload


class NoiseFrames:
    """Reads and writes one connection's messages over noise, after its handshake."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        key: bytes,
        max_bytes: int,
        read_seconds: float,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.max_bytes = max_bytes
        self.read_seconds = read_seconds
        self.proto = NoiseConnection.from_name(PROTOCOL)
        self.proto.set_as_responder()
        self.proto.set_psks(key)
        self.proto.set_prologue(PROLOGUE)
        self.proto.start_handshake()
        self.ready = False

    async def handshake(self, name: str, mac: str) -> None:
        """The client's hello and first message, the device's hello and answer; FrameError
        (after telling the client why) when it is not a noise client or has another key."""
        hello = await self._payload(first=True)
        if hello is None:
            raise EOFError
        message = await self._payload()
        if message is None or not message or message[0] != 0x00:
            raise FrameError("a noise client without a handshake")
        self.writer.write(_frame(b"\x01" + name.encode() + b"\0" + mac.encode() + b"\0"))
        try:
            self.proto.read_message(message[1:])
        except (InvalidTag, NoiseInvalidMessage, NoiseValueError, ValueError):
            self.writer.write(_frame(b"\x01" + MAC_FAILURE.encode()))
            raise FrameError("the client's encryption key is not this device's") from None
        self.writer.write(_frame(b"\x00" + self.proto.write_message()))
        self.ready = True

    async def read(self) -> Message | None:
        """The next message, or None at the end of the stream (between frames)."""
        payload = await self._payload()
        if payload is None:
            return None
        try:
            plain = self.proto.decrypt(payload)
        except (InvalidTag, NoiseInvalidMessage, NoiseValueError) as exc:
            raise FrameError(f"a frame does not decrypt ({type(exc).__name__})") from None
        if len(plain) < 4:
            raise FrameError("a decrypted frame shorter than its header")
        kind = (plain[0] << 8) | plain[1]
        cls: Any = MESSAGE_TYPE_TO_PROTO.get(kind)
        if cls is None:
            raise FrameError(f"unknown message type {kind}")
        try:
            return cls.FromString(bytes(plain[4:]))
        except DecodeError as exc:
            raise FrameError(f"message type {kind} does not decode: {exc}") from None

    def encode(self, *messages: Message) -> bytes:
        out = []
        for message in messages:
            data = message.SerializeToString()
            kind = MESSAGE_TYPE_OF[type(message)]
            header = bytes((kind >> 8, kind & 0xFF, len(data) >> 8 & 0xFF, len(data) & 0xFF))
            out.append(_frame(self.proto.encrypt(header + data)))
        return b"".join(out)

    def refuse_plaintext(self) -> bytes:
        """What a plaintext client gets: a noise frame (it then asks for a key)."""
        return _frame(b"\x01Bad indicator byte")

    async def _payload(self, first: bool = False) -> bytes | None:
        start = await self.reader.read(1)
        if not start:
            return None
        try:
            async with asyncio.timeout(self.read_seconds):
                return await self._rest(start[0], first)
        except TimeoutError:
            raise FrameError(f"a frame was not completed within {self.read_seconds:g} s") from None

    async def _rest(self, preamble: int, first: bool) -> bytes:
        if preamble == 0x00 and first:
            self.writer.write(self.refuse_plaintext())
            raise FrameError("a plaintext client; this device is encrypted")
        if preamble != 0x01:
            raise FrameError(f"not an encrypted ESPHome API frame (first byte 0x{preamble:02x})")
        high, low = await self.reader.readexactly(2)
        length = (high << 8) | low
        if length > self.max_bytes + TAG_BYTES + 4:
            raise FrameError(f"a frame of {length} bytes is over the cap of {self.max_bytes}")
        return await self.reader.readexactly(length) if length else b""
