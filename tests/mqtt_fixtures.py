"""Fixtures for a real mosquitto broker on 127.0.0.1, a recording subscriber, and ``app``.

* ``mosquitto``: a started broker with three listeners: ``port`` (anonymous),
  ``auth_port`` (user ``voiced`` / ``s3cret``) and ``tls_port`` (certificate from a CA
  made for the test run, ``certs.ca``); persistence on, so ``restart()`` keeps sessions.
* ``mqtt_recorder``: a factory of subscribers that record what arrives.
* ``assistant``: ``RecordingAssistant``, a small real object implementing the
  ``voiced.context.Assistant`` methods that records the calls it gets.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

USERNAME = "voiced"
PASSWORD = "s3cret"


QUIET_PORTS = range(20000, 32000)
"""Where ``free_port`` looks: below Linux's ephemeral range (32768-60999 by default), which
the kernel gives to outgoing connections and to ``bind(0)``."""
_given: set[int] = set()


def free_port() -> int:
    """A free port on 127.0.0.1 below the ephemeral range, never the same twice in one
    process: no outgoing connection takes it before the test binds it, and a client that dials
    it while nothing listens there cannot connect to itself."""
    quiet = range(QUIET_PORTS.start, min(QUIET_PORTS.stop, _ephemeral_low()))
    for port in random.sample(quiet, min(200, len(quiet))):
        if port in _given:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    raise RuntimeError(f"no free port in {quiet} on 127.0.0.1")


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def wait_port(port: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path


def make_certs(folder: Path) -> Certs:
    """A throw-away CA and a server certificate for 127.0.0.1/localhost (openssl CLI)."""
    folder.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=folder, check=True, capture_output=True)

    openssl(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=voiced test CA",
    )
    openssl(
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    )
    (folder / "ext.cnf").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
    )
    openssl(
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    )
    return Certs(folder / "ca.crt", folder / "server.crt", folder / "server.key")


class Mosquitto:
    """A mosquitto process with an anonymous, a password and a TLS listener."""

    def __init__(self, folder: Path, certs: Certs) -> None:
        self.folder = folder
        self.certs = certs
        self.port, self.auth_port, self.tls_port = free_port(), free_port(), free_port()
        self.username, self.password = USERNAME, PASSWORD
        self.process: subprocess.Popen | None = None
        self._started = False  # after the first start the ports stay (clients reconnect)
        self.passwd = folder / "passwd"
        subprocess.run(
            ["mosquitto_passwd", "-b", "-c", str(self.passwd), USERNAME, PASSWORD],
            check=True,
            capture_output=True,
        )
        self.passwd.chmod(0o600)
        self.conf = folder / "mosquitto.conf"
        self.log = folder / "mosquitto.log"
        self._write_conf()

    def _write_conf(self) -> None:
        # as root, mosquitto drops to user "mosquitto", who cannot read the test's folder
        run_as = "user root" if os.geteuid() == 0 else ""
        self.conf.write_text(
            f"""per_listener_settings true
{run_as}
persistence true
persistence_location {self.folder}/
log_dest file {self.log}
log_type error
log_type warning
log_type notice
max_queued_messages 100000

listener {self.port} 127.0.0.1
allow_anonymous true

listener {self.auth_port} 127.0.0.1
allow_anonymous false
password_file {self.passwd}

listener {self.tls_port} 127.0.0.1
allow_anonymous true
cafile {self.certs.ca}
certfile {self.certs.server_cert}
keyfile {self.certs.server_key}
"""
        )

    def start(self) -> None:
        """Start the broker; on its first start, ports taken meanwhile are picked again.

        A port found free can be taken by another socket before mosquitto binds it (the
        ephemeral range is shared with every outgoing connection), and mosquitto then exits.
        """
        for attempt in range(3):
            self.process = subprocess.Popen(
                ["mosquitto", "-c", str(self.conf)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if self._listening(timeout=10.0):
                self._started = True
                return
            exited = self.process.poll() is not None
            if not exited:
                self.process.kill()
                self.process.wait(10)
            self.process = None
            if not (exited and not self._started and attempt < 2):
                break
            self.port, self.auth_port, self.tls_port = free_port(), free_port(), free_port()
            self._write_conf()
        log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
        raise TimeoutError(
            f"mosquitto did not listen on 127.0.0.1:{self.port}/{self.auth_port}/"
            f"{self.tls_port}; its log ends:\n{log}"
        )

    def _listening(self, timeout: float) -> bool:
        """Wait until all three listeners accept, or the process has exited."""
        deadline = time.monotonic() + timeout
        waiting = [self.port, self.auth_port, self.tls_port]
        while waiting and time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", waiting[0]), 0.2):
                    waiting.pop(0)
            except OSError:
                time.sleep(0.02)
        return not waiting

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the broker (SIGTERM saves its persistence file; SIGKILL does not)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(10)
        self.process = None

    def restart(self, down_seconds: float = 0.0) -> None:
        self.stop()
        time.sleep(down_seconds)
        self.start()

    @property
    def url(self) -> str:
        return f"mqtt://127.0.0.1:{self.port}"


class Recorder:
    """A plain paho subscriber that records (topic, payload, retain) as they arrive."""

    def __init__(
        self, port: int, topics: list[str], client_id: str | None = None, persistent: bool = False
    ) -> None:
        self.messages: list[tuple[str, bytes, bool]] = []
        self.cond = threading.Condition()
        self.subscribed = threading.Event()
        self.client = paho.Client(
            CallbackAPIVersion.VERSION2,
            client_id=client_id or f"rec-{uuid.uuid4().hex[:8]}",
            protocol=paho.MQTTv311,
            clean_session=not persistent,
        )
        self.client.reconnect_delay_set(0.05, 0.2)

        def on_connect(client, userdata, flags, reason, properties):
            for topic in topics:
                client.subscribe(topic, qos=1)

        def on_subscribe(client, userdata, mid, reasons, properties):
            self.subscribed.set()

        def on_message(client, userdata, message):
            with self.cond:
                self.messages.append((message.topic, message.payload, bool(message.retain)))
                self.cond.notify_all()

        self.client.on_connect = on_connect
        self.client.on_subscribe = on_subscribe
        self.client.on_message = on_message
        self.client.connect("127.0.0.1", port, keepalive=10)
        self.client.loop_start()
        if not self.subscribed.wait(10):
            raise TimeoutError("recorder could not subscribe")

    def wait_for(
        self, predicate: Callable[[list[tuple[str, bytes, bool]]], Any], timeout: float = 10.0
    ) -> Any:
        """Wait until ``predicate(messages)`` is truthy; return its value or raise."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                result = predicate(list(self.messages))
                if result:
                    return result
                left = deadline - time.monotonic()
                if left <= 0:
                    shown = [(t, p[:80]) for t, p, _ in self.messages[-10:]]
                    raise TimeoutError(f"condition not met in {timeout} s; last: {shown}")
                self.cond.wait(min(left, 0.1))

    def on(self, topic: str, timeout: float = 10.0) -> bytes:
        """The payload of the first message on a topic (waits for it)."""
        return self.wait_for(
            lambda ms: next(((p,) for t, p, _ in ms if t == topic), None), timeout
        )[0]

    async def until(
        self, predicate: Callable[[list[tuple[str, bytes, bool]]], Any], timeout: float = 10.0
    ) -> Any:
        """``wait_for`` without blocking the event loop (for async tests)."""
        return await asyncio.to_thread(self.wait_for, predicate, timeout)

    async def first(self, topic: str, timeout: float = 10.0) -> bytes:
        """``on`` without blocking the event loop (for async tests)."""
        return await asyncio.to_thread(self.on, topic, timeout)

    def payloads(self, topic: str) -> list[bytes]:
        with self.cond:
            return [p for t, p, _ in self.messages if t == topic]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@dataclass
class RecordingAssistant:
    """The daemon as plugins see it, reduced to recording what it was asked to do.

    ``emit`` broadcasts to ``observers`` on the loop (as the daemon's ``voiced_event``
    hook would); ``call_threadsafe`` runs coroutines on the loop that created it.
    """

    site_id: str = "default"
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.get_running_loop)
    calls: list[tuple[Any, ...]] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    observers: list[Any] = field(default_factory=list)
    stages: dict[tuple[str, str], Any] = field(default_factory=dict)
    sites: set[str] | None = None  # the sites it knows besides its own; None: any

    def __post_init__(self) -> None:
        self.settings = SimpleNamespace(site_id=self.site_id)

    def emit(self, event: Any) -> None:
        self.loop.call_soon_threadsafe(self._broadcast, event)

    def _broadcast(self, event: Any) -> None:
        self.events.append(event)
        for observer in self.observers:
            observer.voiced_event(event)

    async def say(self, text: str, site_id: str | None = None) -> None:
        self.calls.append(("say", text, site_id))

    async def listen(self, site_id: str | None = None) -> None:
        self.calls.append(("listen", site_id))

    def knows_site(self, site_id: str) -> bool:
        return self.sites is None or site_id in self.sites or site_id == self.site_id

    def set_muted(self, muted: bool, site_id: str | None = None) -> None:
        """Records the call and reports it as the core does: ``muted``, then ``state``."""
        from voiced import events as ev

        self.calls.append(("mute", muted, site_id))
        site = site_id or self.site_id
        self.emit(ev.Muted(muted, "command").event(None, site))
        self.emit(ev.State("idle", muted).event(None, site))

    def cancel(self, site_id: str | None = None) -> None:
        self.calls.append(("cancel", site_id))

    async def enroll_speaker(self, name: str, site_id: str | None = None) -> bool:
        self.calls.append(("enroll", name, site_id))
        return True

    def forget_speaker(self, name: str) -> bool:
        self.calls.append(("forget-speaker", name))
        return name == "alice"

    def stage(self, kind: str, name: str | None = None) -> Any:
        for (k, n), obj in self.stages.items():
            if k == kind and (name is None or n == name):
                return obj
        return None

    def call_threadsafe(self, coro: Any) -> None:
        asyncio.run_coroutine_threadsafe(coro, self.loop)

    def errors(self) -> list[Any]:
        return [e for e in self.events if str(e.type) == "error"]


async def eventually(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Poll ``predicate`` on the loop until truthy; raise TimeoutError naming it."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met in {timeout} s")
        await asyncio.sleep(0.02)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not installed")
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def mosquitto(tmp_path: Path, certs: Certs) -> Iterator[Mosquitto]:
    if shutil.which("mosquitto") is None:
        pytest.skip("mosquitto not installed (apt-get install mosquitto)")
    broker = Mosquitto(tmp_path, certs)
    broker.start()
    yield broker
    broker.stop(signal.SIGKILL)


@pytest.fixture
def mqtt_recorder(mosquitto: Mosquitto) -> Iterator[Callable[..., Recorder]]:
    made: list[Recorder] = []

    def make(*topics: str, **kwargs: Any) -> Recorder:
        recorder = Recorder(kwargs.pop("port", mosquitto.port), list(topics) or ["#"], **kwargs)
        made.append(recorder)
        return recorder

    yield make
    for recorder in made:
        recorder.close()


@pytest.fixture
async def assistant() -> RecordingAssistant:
    return RecordingAssistant()
