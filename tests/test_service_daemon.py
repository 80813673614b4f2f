"""``voiced run`` as systemd runs it: readiness, watchdog, SIGHUP reload, SIGTERM, MQTT status.

The daemon is a real subprocess with its own NOTIFY_SOCKET and WATCHDOG_USEC, reading the
bundled speech sample in a loop at speaking pace (so it never ends by itself), publishing to a
real mosquitto. One reader thread multiplexes the daemon's log pipe and the notify socket and
always drains the pipe first, so the timeline shows a log line before a notification whenever
the daemon wrote the line before sending the notification.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from mqtt_fixtures import Recorder

pytestmark = pytest.mark.slow

CONFIG = """
log_level = "INFO"
site_id = "default"

[pipeline]
source = ["file"]
sink = []
intent = ["hassil"]
handler = ["builtin"]
service = ["log", "mqtt"]

[conversation]
muted = {muted}

[stages.source.file]
path = "bundled:sample"
realtime = true
loop = true

[stages.service.mqtt]
host = "127.0.0.1"
port = {port}
discovery = false
"""


class ServiceProcess:
    """A ``voiced run`` child and the timeline of its log lines and sd_notify messages."""

    def __init__(self, config: Path, watchdog_usec: int = 2_000_000) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="vsd", dir="/tmp"))  # sun_path <= 108 bytes
        self.address = str(self.folder / "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.address)
        self.timeline: list[tuple[str, str]] = []
        self.cond = threading.Condition()
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("JOURNAL_STREAM", "WATCHDOG_PID", "VOICED_LOG_LEVEL")
        }
        env.update(
            NOTIFY_SOCKET=self.address, WATCHDOG_USEC=str(watchdog_usec), PYTHONUNBUFFERED="1"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "voiced.cli", "--config", str(config), "run"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        fd = out.fileno()
        os.set_blocking(fd, False)
        pending = b""
        pipe_open = True
        while pipe_open or self.proc.poll() is None:
            readable, _, _ = select.select(
                [fd, self.sock] if pipe_open else [self.sock], [], [], 0.2
            )
            if not readable:
                continue
            entries: list[tuple[str, str]] = []
            if pipe_open:  # the pipe first: anything written before a datagram was sent
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    data = b""
                else:
                    pipe_open = bool(data)
                pending += data
                *lines, pending = pending.split(b"\n")
                entries += [("log", line.decode(errors="replace")) for line in lines]
            if self.sock in readable:
                message = self.sock.recv(4096).decode()
                entries += [("notify", field) for field in message.split("\n")]
            with self.cond:
                self.timeline.extend(entries)
                self.cond.notify_all()

    def wait_for(
        self,
        predicate: Callable[[list[tuple[str, str]]], object],
        timeout: float = 120.0,
        what: str = "condition",
    ) -> object:
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                result = predicate(self.timeline)
                if result:
                    return result
                if self.proc.poll() is not None and not self.reader.is_alive():
                    raise AssertionError(
                        f"voiced exited ({self.proc.returncode}) before {what}:\n{self.log_tail()}"
                    )
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{what} not seen in {timeout} s:\n{self.log_tail()}")
                self.cond.wait(min(left, 0.2))

    def index(self, kind: str, needle: str, since: int = 0) -> int:
        """Index of the first entry of ``kind`` containing ``needle`` from ``since`` on; or -1."""
        with self.cond:
            for i, (k, text) in enumerate(self.timeline):
                if i >= since and k == kind and needle in text:
                    return i
        return -1

    def count(self, kind: str, needle: str, since: int = 0) -> int:
        with self.cond:
            return sum(
                1
                for i, (k, t) in enumerate(self.timeline)
                if i >= since and k == kind and needle in t
            )

    def log_tail(self, n: int = 30) -> str:
        start = max(0, len(self.timeline) - n)
        return "\n".join(f"{start + i} {k}: {t}" for i, (k, t) in enumerate(self.timeline[start:]))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.reader.join(5)
        self.sock.close()
        os.unlink(self.address)
        self.folder.rmdir()


@pytest.fixture
def service_config(tmp_path: Path, mosquitto) -> Path:
    config = tmp_path / "voiced.toml"
    config.write_text(CONFIG.format(port=mosquitto.port, muted="false"))
    return config


@pytest.fixture
def service(service_config: Path) -> Iterator[ServiceProcess]:
    process = ServiceProcess(service_config)
    yield process
    process.close()


def notified(field: str, since: int = 0) -> Callable[[list[tuple[str, str]]], bool]:
    """Whether ``field`` (e.g. READY=1) was notified at timeline index ``since`` or later."""
    return lambda timeline: any(
        i >= since and k == "notify" and t == field for i, (k, t) in enumerate(timeline)
    )


def test_voiced_run_under_a_service_manager(service, service_config, mosquitto, mqtt_recorder):
    recorder = mqtt_recorder("voiced/#")

    # -- READY=1 only after the models are loaded and warmed up --------------------------------
    service.wait_for(notified("READY=1"), what="READY=1")
    ready = service.index("notify", "READY=1")
    loading = service.index("notify", "STATUS=loading models")
    asr_loaded = service.index("log", "stage-loaded name='whisper-ctranslate2'")
    tts_loaded = service.index("log", "stage-loaded name='piper'")
    ready_event = service.index("log", "voiced.events: [default] ready")
    assert 0 <= loading < asr_loaded < ready, service.log_tail()
    assert 0 <= tts_loaded < ready and 0 <= ready_event < ready, service.log_tail()
    assert service.timeline[ready + 1] == ("notify", "STATUS=ready: default")

    # -- WATCHDOG=1 keeps coming from the event loop (WATCHDOG_USEC=2 s: every second) ---------
    service.wait_for(
        lambda _: service.count("notify", "WATCHDOG=1", ready) >= 3,
        what="three WATCHDOG=1 after READY=1",
    )
    # and the pipeline really runs meanwhile: a spoken command was transcribed
    service.wait_for(lambda _: service.index("log", "transcript text=") >= 0, what="transcript")

    # -- SIGHUP reloads a changed setting without dropping the process ------------------------
    service_config.write_text(CONFIG.format(port=mosquitto.port, muted="true"))
    before_reload = len(service.timeline)
    service.proc.send_signal(signal.SIGHUP)
    service.wait_for(
        lambda _: service.index("log", "reload: applied", before_reload) >= 0,
        what="reload log line",
    )
    applied = service.timeline[service.index("log", "reload: applied", before_reload)][1]
    assert "conversation" in applied
    print("before_reload", before_reload)
    service.wait_for(notified("RELOADING=1", before_reload), what="RELOADING=1")
    service.wait_for(notified("READY=1", before_reload), what="READY=1 after reload")
    payload = recorder.on("voiced/default/event/reload", timeout=20)
    event = json.loads(payload)
    assert event["data"]["ok"] is True
    assert "conversation" in event["data"]["applied"]
    after_reload = len(service.timeline)
    service.wait_for(
        lambda _: service.count("notify", "WATCHDOG=1", after_reload) >= 2,
        what="watchdog after reload",
    )
    assert service.proc.poll() is None

    # -- SIGTERM: exit 0, STOPPING=1, and a retained "offline" on the broker ---------------------
    recorder.wait_for(lambda ms: any(t == "voiced/status" and p == b"online" for t, p, _ in ms))
    service.proc.send_signal(signal.SIGTERM)
    assert service.proc.wait(60) == 0, service.log_tail()
    service.reader.join(10)
    assert service.index("notify", "STOPPING=1") > ready
    assert recorder.payloads("voiced/status")[-1] == b"offline"
    late = Recorder(mosquitto.port, ["voiced/status"])  # a new subscriber gets the retained one
    try:
        assert late.wait_for(
            lambda ms: [(p, r) for t, p, r in ms if t == "voiced/status"], timeout=10
        ) == [(b"offline", True)]
    finally:
        late.close()


def test_a_broken_config_on_reload_keeps_the_daemon_running_and_sigint_stops_it(
    service, service_config
):
    service.wait_for(notified("READY=1"), what="READY=1")
    service_config.write_text(service_config.read_text() + "\n[vad]\nspeech_seconds = -1\n")
    before = len(service.timeline)
    service.proc.send_signal(signal.SIGHUP)
    service.wait_for(
        lambda _: service.index("log", "reload failed", before) >= 0, what="reload failed log line"
    )
    line = service.timeline[service.index("log", "reload failed", before)][1]
    assert "vad.speech_seconds" in line
    service.wait_for(
        notified("STATUS=reload failed; running the previous config", before),
        what="status after failed reload",
    )
    service.wait_for(
        lambda _: service.count("notify", "WATCHDOG=1", before) >= 2,
        what="watchdog after failed reload",
    )
    service.proc.send_signal(signal.SIGINT)  # Ctrl-C in a terminal: the same clean stop
    assert service.proc.wait(60) == 0, service.log_tail()
    assert service.index("log", "SIGINT: stopping", before) >= 0
