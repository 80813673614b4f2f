"""A flood of idle Wyoming connections against a daemon with few file descriptors.

The daemon is a real ``voiced run`` child whose RLIMIT_NOFILE is lowered to 256; the test
opens 1000 TCP connections to its Wyoming port on 127.0.0.1 and holds them. Whether the
server refuses the excess itself (``max_connections``, 64 by default) or is allowed more
connections than it has descriptors (so ``accept()`` fails with EMFILE), it must stay alive,
keep its log bounded, not spin, serve a legitimate client again once the flood is gone, and
give every descriptor back.
"""

from __future__ import annotations

import errno
import os
import resource
import select
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_process import DaemonProcess
from mqtt_fixtures import free_port
from wyoming.client import AsyncTcpClient
from wyoming.info import Describe
from wyoming.tts import Synthesize

from voiced.logs import RepeatLimit

pytestmark = pytest.mark.slow

NOFILE = 256
FLOOD = 1000
HOLD_SECONDS = 8.0

CONFIG = """
log_level = "INFO"
[pipeline]
source = []
wake = []
asr = ["whisper-ctranslate2"]
intent = []
handler = []
tts = ["piper"]
sink = []
service = ["log", "wyoming"]
[stages.service.log]
format = "json"
[stages.service.wyoming]
uri = "tcp://127.0.0.1:{port}"
wake = []
max_connections = {max_connections}
"""


def open_flood(port: int, count: int) -> list[socket.socket]:
    """``count`` connections begun without waiting: past the listen backlog the kernel leaves
    them half-open, which is what a hostile client can do too."""
    socks = []
    for _ in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        code = sock.connect_ex(("127.0.0.1", port))
        assert code in (0, errno.EINPROGRESS), errno.errorcode.get(code, code)
        socks.append(sock)
    return socks


def established(socks: list[socket.socket]) -> int:
    """How many of the flood's connections completed their handshake."""
    count = 0
    for start in range(0, len(socks), 200):  # select() takes at most FD_SETSIZE descriptors
        part = [s for s in socks[start : start + 200] if s.fileno() < 1024]
        _, writable, _ = select.select([], part, [], 0)
        count += sum(1 for s in writable if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
    return count


async def served(port: int, timeout: float = 5.0) -> bool:
    """A legitimate client: describe, then a short synthesize, each answered in time."""
    import asyncio

    try:
        async with AsyncTcpClient("127.0.0.1", port) as client:
            await client.write_event(Describe().event())
            info = await asyncio.wait_for(client.read_event(), timeout)
            if info is None or info.type != "info":
                return False
            await client.write_event(Synthesize(text="The door is locked.").event())
            while True:
                event = await asyncio.wait_for(client.read_event(), timeout * 6)
                if event is None or event.type == "error":
                    return False
                if event.type == "audio-stop":
                    return True
    except (OSError, TimeoutError, ConnectionError):
        return False


async def served_within(port: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if await served(port):
            return True
    return False


@pytest.fixture
def enough_fds_here() -> Iterator[None]:
    """The test itself holds the flood: raise its own soft limit (CI's default is 1024)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max(soft, FLOOD + 512)
    raised = max(hard, wanted) if os.geteuid() == 0 else hard  # root (CI) may raise the cap
    if min(wanted, raised) < FLOOD + 64:
        pytest.skip(f"the hard RLIMIT_NOFILE here ({hard}) is too low to hold {FLOOD} sockets")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, raised), raised))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, raised))  # a raised cap stays raised


@pytest.mark.parametrize(
    "max_connections",
    [64, 2000],
    ids=["refused-by-max_connections", "beyond-the-fd-limit"],
)
async def test_a_connection_flood_past_the_fd_limit_leaves_the_daemon_serving(
    tmp_path: Path, enough_fds_here, max_connections: int
):
    port = free_port()
    config = tmp_path / "voiced.toml"
    config.write_text(CONFIG.format(port=port, max_connections=max_connections))
    daemon = DaemonProcess(config, tmp_path / "voiced.log", nofile=NOFILE)
    flood: list[socket.socket] = []
    try:
        daemon.ready()
        assert await served(port, timeout=30), daemon.tail()  # warm: Piper loaded, fds steady
        baseline = daemon.usage()
        log_before = len(daemon.log_lines())

        flooded_at = time.monotonic()
        flood = open_flood(port, FLOOD)
        time.sleep(1.0)
        held_from = daemon.usage()
        time.sleep(HOLD_SECONDS)
        held_to = daemon.usage()
        connected = established(flood)
        assert daemon.alive(), daemon.tail()
        assert held_to.fds <= NOFILE

        for sock in flood:
            sock.close()
        flood = []
        assert await served_within(port, 30), f"not served after the flood:\n{daemon.tail()}"

        deadline = time.monotonic() + 20
        while daemon.usage().fds > baseline.fds and time.monotonic() < deadline:
            time.sleep(0.2)
        after = daemon.usage()
        lines = daemon.log_lines()[log_before:]
        out_of_resource = [line for line in lines if "out of system resource" in line]
        # the daemon logs at most ``burst`` errors of a kind per ``window``: on a loaded
        # machine the flood and its aftermath may span more than one window
        limit = RepeatLimit()
        windows = 1 + int((time.monotonic() - flooded_at) // limit.window)
        spun = (held_to.cpu_s - held_from.cpu_s) / (held_to.at - held_from.at)
        print(
            f"max_connections={max_connections}: {connected} of {FLOOD} connected, "
            f"fds {baseline.fds} -> {held_to.fds} (held) -> {after.fds}, "
            f"{len(lines)} log lines ({len(out_of_resource)} 'out of system resource'), "
            f"CPU while held {spun:.0%} of a core, {windows} log window(s)"
        )
        assert after.fds <= baseline.fds, (baseline, after)
        assert len(out_of_resource) <= (limit.burst + 2) * windows, out_of_resource[:3]
        assert len(lines) < 300 * windows, "\n".join(lines[-20:])
        # an accept loop that spins on EMFILE burns a core; a parked one costs next to nothing
        assert spun < 0.5, f"{spun:.0%} of a core while the flood was held"
        assert daemon.alive()
    finally:
        for sock in flood:
            sock.close()
        code = daemon.stop()
    assert code == 0, daemon.tail()
