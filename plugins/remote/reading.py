"""Reading a remote Wyoming service's events from a blocking socket, with the server's limits.

The header is checked as the Wyoming server checks its clients' (voiced_plugins.wyoming_server
.reading: one JSON line of at most 64 KiB, data + payload declared within ``max_event_bytes``),
before any data or payload is read; every ``recv`` waits only until the caller's deadline, so
a peer that trickles one byte a second can't stretch one event past it.
"""

from __future__ import annotations

import socket
import time

from voiced_plugins.wyoming_server.reading import (
    HEADER_LINE_BYTES,
    ProtocolError,
    complete,
    parse_header,
)
from wyoming.event import Event

RECV_BYTES = 1 << 16


class PeerProtocolError(Exception):
    """The service sent an event voiced won't read (malformed, or over a limit)."""


class Stalled(TimeoutError):
    """An event began but was not complete by the deadline."""


class EventReader:
    """Events from one connection; bytes read past an event wait for the next one."""

    def __init__(self, sock: socket.socket, peer: str, max_event_bytes: int) -> None:
        self.sock = sock
        self.peer = peer
        self.max_event_bytes = max_event_bytes
        self._buffer = bytearray()

    @property
    def pending(self) -> bool:
        """Bytes of a next event are already here."""
        return bool(self._buffer)

    def read(self, deadline: float) -> Event | None:
        """The next event, whole by ``deadline`` (``time.monotonic()``), or None when the
        service closed the connection between events. TimeoutError when none began by then,
        Stalled when one began, PeerProtocolError for what voiced won't read."""
        line = self._line(deadline)
        if line is None:
            return None
        try:
            header = parse_header(line, self.max_event_bytes)
            raw_data = self._exactly(header.data_length, deadline)
            payload = self._exactly(header.payload_length, deadline)
            return complete(header, raw_data, payload)
        except ProtocolError as exc:
            raise PeerProtocolError(f"{self.peer}: {exc}") from None

    def _line(self, deadline: float) -> bytes | None:
        searched = 0
        while True:
            end = self._buffer.find(b"\n", searched)
            if end >= 0:
                line = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return line
            searched = len(self._buffer)
            if searched > HEADER_LINE_BYTES:
                raise PeerProtocolError(
                    f"{self.peer}: an event header line is over {HEADER_LINE_BYTES} bytes "
                    "with no end"
                )
            if not self._fill(deadline, began=bool(self._buffer)):
                if self._buffer:
                    raise ConnectionResetError("the service closed the connection mid-event")
                return None

    def _exactly(self, size: int, deadline: float) -> bytes | None:
        if not size:
            return None
        while len(self._buffer) < size:
            if not self._fill(deadline, began=True):
                raise ConnectionResetError("the service closed the connection mid-event")
        chunk = bytes(self._buffer[:size])
        del self._buffer[:size]
        return chunk

    def _fill(self, deadline: float, began: bool) -> bool:
        """One ``recv`` into the buffer, waiting until ``deadline`` at most; False at EOF."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise Stalled if began else TimeoutError
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(RECV_BYTES)
        except TimeoutError:
            raise Stalled if began else TimeoutError from None
        if not data:
            return False
        self._buffer += data
        return True
