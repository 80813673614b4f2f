"""Wake word detection on a remote Wyoming service (another voiced's ``detect``).

``process()`` is called for every 20 ms chunk on the daemon's event loop, so it never touches
the network: it queues the chunk for a background thread that streams to the service and
returns a detection that thread has already received. While the service is away, chunks are
dropped (nothing is heard remotely) and the thread dials again after ``retry_seconds``.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import select
import socket
import threading
import time
from collections import deque
from typing import Any

from pydantic import Field
from wyoming.audio import AudioChunk as WyChunk
from wyoming.audio import AudioStart, AudioStop
from wyoming.event import write_event
from wyoming.wake import Detect, Detection

from voiced.api.audio import PIPELINE_FORMAT, AudioChunk
from voiced.api.stages import WakeDetection

from .options import RemoteOptions
from .peer import Address
from .reading import EventReader, PeerProtocolError

log = logging.getLogger(__name__)

QUEUED_CHUNKS = 100  # 2 s of 20 ms chunks; older audio is dropped when the link lags


class RemoteWakeOptions(RemoteOptions):
    names: list[str] = Field(
        default_factory=list, description="wake words to ask for; default: all the service has"
    )


class RemoteWyomingWake:
    def __init__(self, options: RemoteWakeOptions, app: Any) -> None:
        self.options = options
        self.address = Address.parse(options.uri)
        self.name = f"wyoming:{self.address.host}:{self.address.port}"
        self.connected = threading.Event()
        self._chunks: queue.Queue[AudioChunk | None] = queue.Queue(QUEUED_CHUNKS)
        self._detections: deque[str] = deque()
        self._restart = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._failures = 0  # failures in a row: each doubles the wait before the next dial

    def load(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"wake-{self.name}", daemon=True)
        self._thread.start()

    def process(self, chunk: AudioChunk) -> WakeDetection | None:
        if self.connected.is_set():
            if self._chunks.full():
                with contextlib.suppress(queue.Empty):
                    self._chunks.get_nowait()
            self._chunks.put_nowait(chunk)
        if self._detections:
            name = self._detections.popleft()
            return WakeDetection(name, 1.0, {"remote": str(self.address)})
        return None

    def reset(self) -> None:
        self._detections.clear()
        self._drain()

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(queue.Full):
            self._chunks.put_nowait(None)
        sock = self._sock
        if sock is not None:  # a read in progress returns at once
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(5)

    # -- the streaming thread ----------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                sock = socket.create_connection(
                    (self.address.host, self.address.port), self.options.connect_timeout
                )
            except OSError as exc:
                log.warning("%s: cannot connect (%s); retrying", self.name, exc)
                self._stop.wait(self.options.retry_seconds)
                continue
            self._sock = sock
            try:
                self._stream(sock)
            except (OSError, ValueError, PeerProtocolError) as exc:
                self._failures += 1
                if not self._stop.is_set():
                    log.warning("%s: connection lost (%s); retrying", self.name, exc)
            finally:
                self._sock = None
                self.connected.clear()
                with contextlib.suppress(OSError):
                    sock.close()
                self._drain()
            self._stop.wait(self._rest())

    def _rest(self) -> float:
        """``retry_seconds``, doubled for each failure in a row, up to ``max_retry_seconds``."""
        doubled = self.options.retry_seconds * 2 ** min(max(self._failures - 1, 0), 16)
        return min(doubled, max(self.options.max_retry_seconds, self.options.retry_seconds))

    def _stream(self, sock: socket.socket) -> None:
        sock.settimeout(self.options.timeout)
        file = sock.makefile("wb")
        reader = EventReader(sock, str(self.address), self.options.max_event_bytes)
        fmt = PIPELINE_FORMAT
        self._start(file)
        self.connected.set()
        log.info("%s: streaming for wake words", self.name)
        while not self._stop.is_set():
            try:
                chunk = self._chunks.get(timeout=0.1)
            except queue.Empty:
                chunk = None
            if chunk is not None:
                write_event(WyChunk(fmt.rate, fmt.width, fmt.channels, chunk.audio).event(), file)
                file.flush()
            while reader.pending or select.select([sock], [], [], 0)[0]:
                event = reader.read(time.monotonic() + self.options.timeout)
                sock.settimeout(self.options.timeout)
                if event is None:
                    raise OSError("the service closed the connection")
                self._failures = 0
                if Detection.is_type(event.type):
                    self._detections.append(Detection.from_event(event).name or "wake")
                    # voiced's detect answers once per stream: start a new one
                    write_event(AudioStop().event(), file)
                    self._start(file)

    def _start(self, file: Any) -> None:
        fmt = PIPELINE_FORMAT
        write_event(Detect(names=self.options.names or None).event(), file)
        write_event(AudioStart(fmt.rate, fmt.width, fmt.channels).event(), file)
        file.flush()

    def _drain(self) -> None:
        with contextlib.suppress(queue.Empty):
            while True:
                self._chunks.get_nowait()
