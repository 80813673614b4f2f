"""A remote Wyoming stage against a hostile Wyoming service: a real TCP server on 127.0.0.1
that answers a request with a header line that never ends, a header announcing a 1 GiB
payload, one byte a second, or an endless stream of audio.

Each answer is refused within its limits (size from the header, time within one message),
the connection is dropped and the service rests; a call reading forever returns on close.
"""

from __future__ import annotations

import json
import resource
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from voiced_plugins.remote.peer import RemoteUnavailable, WyomingPeer

Behaviour = Callable[[socket.socket], None]


def header(kind: str, **fields: object) -> bytes:
    return json.dumps({"type": kind, "version": "1.6.0", **fields}).encode() + b"\n"


def endless_header(conn: socket.socket) -> None:
    chunk = b"x" * 65536
    for _ in range(4096):  # 256 MiB at most, no newline
        conn.sendall(chunk)


def huge_payload(conn: socket.socket) -> None:
    conn.sendall(header("info", payload_length=1 << 30))
    conn.sendall(b"\0" * 65536)


def huge_data(conn: socket.socket) -> None:
    conn.sendall(header("info", data_length=1 << 30))


def trickle(conn: socket.socket) -> None:
    for byte in header("info", data_length=2) + b"{}":
        conn.sendall(bytes([byte]))
        time.sleep(1.0)


def endless_audio(conn: socket.socket) -> None:
    chunk = header("audio-chunk", payload_length=3200) + b"\0" * 3200
    for _ in range(100_000):
        conn.sendall(chunk)
        time.sleep(0.001)


@contextmanager
def hostile_service(behaviour: Behaviour) -> Iterator[str]:
    """A Wyoming service on 127.0.0.1 that reads each request's first line, then misbehaves."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                try:
                    conn.recv(65536)
                    behaviour(conn)
                    time.sleep(30)  # then nothing more, until the client goes
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        server.close()


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize(
    "behaviour, said",
    [
        (endless_header, "header"),
        (huge_payload, "bytes"),
        (huge_data, "bytes"),
    ],
    ids=["a-header-with-no-newline", "a-1-GiB-payload", "a-1-GiB-data"],
)
def test_an_oversized_message_is_refused_from_its_header(behaviour, said):
    with hostile_service(behaviour) as uri:
        peer = WyomingPeer(uri, timeout=10.0, retry_seconds=0.5)
        before = rss_mb()
        began = time.monotonic()
        with pytest.raises(RemoteUnavailable, match=said):
            peer.describe()
        assert time.monotonic() - began < 5.0  # refused as it came, not after the timeout
        assert rss_mb() - before < 100  # nothing near the announced size was held
        with pytest.raises(RemoteUnavailable, match="next try"):
            peer.describe()  # the service rests: no second connection at once
        peer.close()


def test_a_message_trickled_a_byte_a_second_ends_at_the_timeout():
    with hostile_service(trickle) as uri:
        peer = WyomingPeer(uri, timeout=3.0)
        began = time.monotonic()
        with pytest.raises(RemoteUnavailable, match="not complete within 3 s"):
            peer.describe()
        assert time.monotonic() - began < 3.0 + 2.0  # within one message, a stated 2 s margin
        peer.close()


def test_close_ends_a_call_reading_an_endless_stream():
    with hostile_service(endless_audio) as uri:
        peer = WyomingPeer(uri, timeout=60.0, max_answer_bytes=1 << 40)
        outcome: list[BaseException] = []

        def call() -> None:
            try:
                peer.describe()
            except BaseException as exc:
                outcome.append(exc)

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        time.sleep(1.0)  # reading audio by now
        began = time.monotonic()
        peer.close()
        caller.join(5.0)
        assert not caller.is_alive(), "the call still reads after close()"
        assert time.monotonic() - began < 5.0
        assert outcome and isinstance(outcome[0], Exception)
