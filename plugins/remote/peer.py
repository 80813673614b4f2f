"""One remote Wyoming service, spoken to with blocking sockets from the stage's worker thread.

A stage call runs in a worker thread (``Asr.transcribe``, ``Tts.synthesize``), so the peer
uses plain sockets and wyoming's own ``read_event``/``write_event``: no event loop of its own.
Connections are kept for the next request (a service that closes after each answer, as
``wyoming-faster-whisper`` does, is simply redialled). While the service is down (or after it
misbehaved: an event over a limit, malformed, not complete in time) every call fails at once
with :class:`RemoteUnavailable`, and it is dialled again after a backoff, so an engine chain
hands the call to the next engine without waiting for a connect timeout.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import BinaryIO
from urllib.parse import urlsplit

from wyoming.error import Error
from wyoming.event import Event, write_event
from wyoming.info import Describe, Info

from voiced.api.net import reached_itself

from .reading import EventReader, PeerProtocolError, Stalled

EVENT_COST = 256
"""What one event of an answer counts for against ``max_answer_bytes`` besides its payload
(an endless stream of empty events is bounded too)."""


class RemoteError(RuntimeError):
    """The remote service answered with an error, or with something we did not ask for."""


class RemoteUnavailable(RemoteError):
    """The remote service cannot be reached (refused, timed out, closed mid-request)."""


@dataclass(frozen=True)
class Address:
    host: str
    port: int

    @classmethod
    def parse(cls, uri: str) -> Address:
        """``tcp://host:port``, ``host:port`` or ``wyoming://host:port``."""
        text = uri if "://" in uri else f"tcp://{uri}"
        parts = urlsplit(text)
        if parts.scheme not in ("tcp", "wyoming") or not parts.hostname or parts.port is None:
            raise ValueError(f"{uri!r}: use tcp://HOST:PORT (or HOST:PORT)")
        return cls(parts.hostname, parts.port)

    def __str__(self) -> str:
        return f"tcp://{self.host}:{self.port}"


class _Connection:
    def __init__(self, sock: socket.socket, peer: str, max_event_bytes: int) -> None:
        self.sock = sock
        self.file: BinaryIO = sock.makefile("wb")
        self.reader = EventReader(sock, peer, max_event_bytes)

    def stale(self) -> bool:
        """The peer closed it (or sent something unasked) while it sat idle."""
        readable, _, _ = select.select([self.sock], [], [], 0)
        return bool(readable) or self.reader.pending

    def shutdown(self) -> None:
        """End it now, also for a thread blocked reading it (its ``recv`` returns at once)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()
        with contextlib.suppress(OSError):
            self.sock.close()


class WyomingPeer:
    """Requests to one Wyoming service: connect, send events, read until the answer.

    Every answer is read within ``timeout`` in all, each event within ``max_event_bytes`` and
    the answer's payloads within ``max_answer_bytes``; a service that breaks a limit or sends
    what voiced won't read loses its connection and rests (``retry_seconds``, doubled for each
    failure in a row up to ``max_retry_seconds``). ``close`` ends the connections in use too.
    """

    def __init__(
        self,
        uri: str,
        *,
        connect_timeout: float = 2.0,
        timeout: float = 15.0,
        retry_seconds: float = 5.0,
        max_retry_seconds: float = 60.0,
        max_event_bytes: int = 1 << 20,
        max_answer_bytes: int = 64 << 20,
    ) -> None:
        self.address = Address.parse(uri)
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.retry_seconds = retry_seconds
        self.max_retry_seconds = max(max_retry_seconds, retry_seconds)
        self.max_event_bytes = max_event_bytes
        self.max_answer_bytes = max_answer_bytes
        self.down_reason: str | None = None
        self.failures = 0  # failures in a row: each doubles the rest
        self._down_until = 0.0
        self._idle: list[_Connection] = []
        self._active: set[_Connection] = set()
        self._closed = False
        self._lock = threading.Lock()

    def __str__(self) -> str:
        return str(self.address)

    def request(
        self, events: Iterable[Event], done: Callable[[Event], bool], timeout: float | None = None
    ) -> list[Event]:
        """Send ``events``; return what arrives up to and including the first ``done`` one."""
        self._check_up()
        events = list(events)
        limit = timeout or self.timeout
        previous = ""
        for attempt in (1, 2):
            conn, reused = self._checkout(previous)
            try:
                answer = self._exchange(conn, events, done, limit)
            except BaseException as exc:
                self._drop(conn)
                failure = self._failure(exc, limit)
                if failure is None:
                    raise
                previous, down, redial = failure
                if redial and reused and attempt == 1:  # an idle connection the peer dropped
                    continue
                raise self._mark_down(previous) if down else RemoteUnavailable(previous) from None
            self.release(conn)
            return answer
        raise AssertionError("unreachable")

    @property
    def resting(self) -> bool:
        """Down a moment ago: calls fail at once until the rest has passed."""
        return self._down_until > time.monotonic()

    # -- a stream of the caller's own (events written as they come, answer read at the end) --

    def connect(self) -> tuple[_Connection, bool]:
        """A connection (kept, or dialled now) and whether it was kept; RemoteUnavailable while
        the service is down."""
        self._check_up()
        return self._checkout()

    def release(self, conn: _Connection) -> None:
        """The stream got its answer: keep the connection for the next request."""
        self._checkin(conn)
        self.down_reason = None
        self.failures = 0

    def broken(self, conn: _Connection, reason: str) -> RemoteUnavailable:
        """The stream failed on ``conn``: close it, the service counts as down for a while."""
        self._drop(conn)
        return self._mark_down(reason)

    def discard(self, conn: _Connection) -> None:
        """Close ``conn`` without counting it against the service (a stream given up)."""
        self._drop(conn)

    @staticmethod
    def write(conn: _Connection, events: Iterable[Event], timeout: float) -> None:
        conn.sock.settimeout(timeout)
        for event in events:
            write_event(event, conn.file)
        conn.file.flush()

    def describe(self, timeout: float | None = None) -> Info:
        """The service's ``info``: what it offers (programs, models, voices)."""
        answer = self.request([Describe().event()], lambda e: Info.is_type(e.type), timeout)
        return Info.from_event(answer[-1])

    def close(self) -> None:
        """No more requests; connections in use end too (a call reading one returns)."""
        with self._lock:
            self._closed = True
            active, self._active = list(self._active), set()
        self._close_idle()
        for conn in active:
            conn.shutdown()

    def read_until(
        self, conn: _Connection, done: Callable[[Event], bool], timeout: float
    ) -> list[Event]:
        """Events up to and including the first ``done`` one, all within ``timeout`` and
        ``max_answer_bytes`` of payload; TimeoutError (Stalled mid-event), _Closed,
        PeerProtocolError, RemoteError (the service's own error)."""
        deadline = time.monotonic() + timeout
        answer: list[Event] = []
        size = 0
        while True:
            event = conn.reader.read(deadline)
            if event is None:
                raise _Closed("end of stream before the answer")
            if Error.is_type(event.type):
                error = Error.from_event(event)
                raise RemoteError(f"remote error: {error.text} ({error.code or 'no code'})")
            size += len(event.payload or b"") + EVENT_COST
            if size > self.max_answer_bytes:
                raise PeerProtocolError(
                    f"{self.address}: the answer is over {self.max_answer_bytes} bytes "
                    "(max_answer_bytes)"
                )
            answer.append(event)
            if done(event):
                return answer

    # -- internals --------------------------------------------------------------------------

    def _failure(self, exc: BaseException, limit: float) -> tuple[str, bool, bool] | None:
        """What went wrong, as (reason, the service counts as down, a redial may help); None
        for what is not the connection's fault (the service's own error, a bug here)."""
        if isinstance(exc, (_Closed, ConnectionError)):
            return f"{self.address} closed the connection ({exc})", True, True
        if isinstance(exc, Stalled):
            return (
                f"{self.address} sent an event that was not complete within {limit:g} s "
                "(timeout); the connection is dropped",
                True,
                False,
            )
        if isinstance(exc, TimeoutError):
            return f"{self.address} did not answer within {limit:g} s", False, False
        if isinstance(exc, PeerProtocolError):
            return f"{exc}; the connection is dropped", True, False
        if isinstance(exc, OSError):
            return f"{self.address}: {exc}", True, True
        return None

    def _check_up(self) -> None:
        if self._closed:
            raise RemoteUnavailable(f"{self.address}: the stage is closed")
        left = self._down_until - time.monotonic()
        if left > 0:
            raise RemoteUnavailable(f"{self.down_reason}; next try in {left:.1f} s")

    def _mark_down(self, reason: str) -> RemoteUnavailable:
        self.failures += 1
        rest = min(self.retry_seconds * 2 ** min(self.failures - 1, 16), self.max_retry_seconds)
        self.down_reason = reason
        self._down_until = time.monotonic() + rest
        self._close_idle()
        return RemoteUnavailable(reason)

    def _checkout(self, previous: str = "") -> tuple[_Connection, bool]:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.stale():
                    self._active.add(conn)
                    return conn, True
                conn.close()
        try:
            sock = socket.create_connection(
                (self.address.host, self.address.port), self.connect_timeout
            )
        except OSError as exc:
            after = f" (after: {previous})" if previous else ""
            raise self._mark_down(f"cannot connect to {self.address}: {exc}{after}") from None
        if reached_itself(sock):
            sock.close()
            raise self._mark_down(
                f"nothing listens on {self.address} (the connection reached itself)"
            )
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Connection(sock, str(self.address), self.max_event_bytes)
        with self._lock:
            if self._closed:
                conn.close()
                raise RemoteUnavailable(f"{self.address}: the stage is closed")
            self._active.add(conn)
        return conn, False

    def _checkin(self, conn: _Connection) -> None:
        with self._lock:
            self._active.discard(conn)
            if self._closed:
                conn.close()
            else:
                self._idle.append(conn)

    def _drop(self, conn: _Connection) -> None:
        with self._lock:
            self._active.discard(conn)
        conn.close()

    def _close_idle(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _exchange(
        self, conn: _Connection, events: list[Event], done: Callable[[Event], bool], limit: float
    ) -> list[Event]:
        self.write(conn, events, limit)
        return self.read_until(conn, done, limit)


class _Closed(Exception):
    pass


Closed = _Closed
"""The service ended the stream before the answer (for streams of a stage's own)."""
