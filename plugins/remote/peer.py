"""One remote Wyoming service, spoken to with blocking sockets from the stage's worker thread.

A stage call runs in a worker thread (``Asr.transcribe``, ``Tts.synthesize``), so the peer
uses plain sockets and wyoming's own ``read_event``/``write_event``: no event loop of its own.
Connections are kept for the next request (a service that closes after each answer, as
``wyoming-faster-whisper`` does, is simply redialled). While the service is down every call
fails at once with :class:`RemoteUnavailable`, and it is dialled again after a backoff, so an
engine chain hands the call to the next engine without waiting for a connect timeout.
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
from wyoming.event import Event, read_event, write_event
from wyoming.info import Describe, Info


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
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.file: BinaryIO = sock.makefile("rwb")

    def stale(self) -> bool:
        """The peer closed it (or sent something unasked) while it sat idle."""
        readable, _, _ = select.select([self.sock], [], [], 0)
        return bool(readable)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.file.close()
        with contextlib.suppress(OSError):
            self.sock.close()


class WyomingPeer:
    """Requests to one Wyoming service: connect, send events, read until the answer."""

    def __init__(
        self,
        uri: str,
        *,
        connect_timeout: float = 2.0,
        timeout: float = 15.0,
        retry_seconds: float = 5.0,
    ) -> None:
        self.address = Address.parse(uri)
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.retry_seconds = retry_seconds
        self.down_reason: str | None = None
        self._down_until = 0.0
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()

    def __str__(self) -> str:
        return str(self.address)

    def request(
        self, events: Iterable[Event], done: Callable[[Event], bool], timeout: float | None = None
    ) -> list[Event]:
        """Send ``events``; return what arrives up to and including the first ``done`` one."""
        self._check_up()
        events = list(events)
        previous = ""
        for attempt in (1, 2):
            conn, reused = self._checkout(previous)
            try:
                answer = self._exchange(conn, events, done, timeout or self.timeout)
            except (_Closed, ConnectionError) as exc:
                conn.close()
                previous = f"{self.address} closed the connection ({exc})"
                if reused and attempt == 1:  # an idle connection the peer dropped: dial again
                    continue
                raise self._mark_down(previous) from None
            except TimeoutError:
                conn.close()
                raise RemoteUnavailable(
                    f"{self.address} did not answer within {timeout or self.timeout:g} s"
                ) from None
            except OSError as exc:
                conn.close()
                previous = f"{self.address}: {exc}"
                if reused and attempt == 1:
                    continue
                raise self._mark_down(previous) from None
            except BaseException:
                conn.close()
                raise
            self._checkin(conn)
            self.down_reason = None
            return answer
        raise AssertionError("unreachable")

    @property
    def resting(self) -> bool:
        """Down a moment ago: calls fail at once until ``retry_seconds`` have passed."""
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

    def broken(self, conn: _Connection, reason: str) -> RemoteUnavailable:
        """The stream failed on ``conn``: close it, the service counts as down for a while."""
        conn.close()
        return self._mark_down(reason)

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
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # -- internals --------------------------------------------------------------------------

    def _check_up(self) -> None:
        left = self._down_until - time.monotonic()
        if left > 0:
            raise RemoteUnavailable(f"{self.down_reason}; next try in {left:.1f} s")

    def _mark_down(self, reason: str) -> RemoteUnavailable:
        self.down_reason = reason
        self._down_until = time.monotonic() + self.retry_seconds
        self.close()
        return RemoteUnavailable(reason)

    def _checkout(self, previous: str = "") -> tuple[_Connection, bool]:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not conn.stale():
                    return conn, True
                conn.close()
        try:
            sock = socket.create_connection(
                (self.address.host, self.address.port), self.connect_timeout
            )
        except OSError as exc:
            after = f" (after: {previous})" if previous else ""
            raise self._mark_down(f"cannot connect to {self.address}: {exc}{after}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _Connection(sock), False

    def _checkin(self, conn: _Connection) -> None:
        with self._lock:
            self._idle.append(conn)

    @classmethod
    def _exchange(
        cls, conn: _Connection, events: list[Event], done: Callable[[Event], bool], timeout: float
    ) -> list[Event]:
        cls.write(conn, events, timeout)
        return cls.read_until(conn, done, timeout)

    @staticmethod
    def read_until(conn: _Connection, done: Callable[[Event], bool], timeout: float) -> list[Event]:
        """Events up to and including the first ``done`` one; TimeoutError, _Closed, RemoteError."""
        deadline = time.monotonic() + timeout
        answer: list[Event] = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            conn.sock.settimeout(left)
            event = read_event(conn.file)
            if event is None:
                raise _Closed("end of stream before the answer")
            if Error.is_type(event.type):
                error = Error.from_event(event)
                raise RemoteError(f"remote error: {error.text} ({error.code or 'no code'})")
            answer.append(event)
            if done(event):
                return answer


class _Closed(Exception):
    pass


Closed = _Closed
"""The service ended the stream before the answer (for streams of a stage's own)."""
