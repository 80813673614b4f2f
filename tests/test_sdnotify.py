"""sd_notify over a real Unix datagram socket, as systemd's NOTIFY_SOCKET would be."""

from __future__ import annotations

import os
import socket
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from voiced.sdnotify import Notifier, watchdog_interval


@pytest.fixture
def listener() -> Iterator[tuple[str, socket.socket]]:
    """A bound datagram socket at a short path (sun_path is limited to 108 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="sdn", dir="/tmp"))
    path = str(folder / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(5)
    yield path, sock
    sock.close()
    os.unlink(path)
    folder.rmdir()


def received(sock: socket.socket) -> list[str]:
    return sock.recv(4096).decode().split("\n")


def test_ready_sends_ready_and_status_in_one_datagram(listener):
    path, sock = listener
    assert Notifier(path).ready("ready: kitchen")
    assert received(sock) == ["READY=1", "STATUS=ready: kitchen"]


def test_status_watchdog_stopping_and_reloading_messages(listener):
    path, sock = listener
    notifier = Notifier(path)
    notifier.status("loading models")
    notifier.watchdog()
    notifier.reloading()
    notifier.stopping()
    messages = [received(sock) for _ in range(4)]
    reloading = messages.pop(2)
    assert messages == [["STATUS=loading models"], ["WATCHDOG=1"], ["STOPPING=1"]]
    assert reloading[0] == "RELOADING=1"
    # systemd 253+ matches a reload by the monotonic time it was announced at
    key, _, usec = reloading[1].partition("=")
    assert key == "MONOTONIC_USEC"
    assert abs(int(usec) - time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000) < 60_000_000


def test_address_comes_from_notify_socket_environment(listener, monkeypatch):
    path, sock = listener
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    assert Notifier().enabled
    Notifier().watchdog()
    assert received(sock) == ["WATCHDOG=1"]


def test_abstract_namespace_socket_written_with_at_sign(monkeypatch):
    name = f"voiced-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + name)
        assert Notifier().ready()
        assert received(sock) == ["READY=1"]


def test_without_notify_socket_every_call_is_a_no_op(monkeypatch):
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    notifier = Notifier()
    assert not notifier.enabled
    assert notifier.ready("x") is False
    assert notifier.watchdog() is False


def test_a_socket_nobody_listens_on_does_not_raise(tmp_path):
    assert Notifier(str(tmp_path / "gone")).ready() is False


@pytest.mark.parametrize(
    ("usec", "pid", "expected"),
    [
        ("2000000", None, 1.0),  # ping at half the watchdog period
        ("30000000", "self", 15.0),
        ("2000000", "1", None),  # the watchdog is meant for another process
        ("abc", None, None),
        (None, None, None),  # not watched
    ],
)
def test_watchdog_interval_is_half_of_watchdog_usec_for_this_process(
    monkeypatch, usec, pid, expected
):
    for name, value in (
        ("WATCHDOG_USEC", usec),
        ("WATCHDOG_PID", str(os.getpid()) if pid == "self" else pid),
    ):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert watchdog_interval() == expected
