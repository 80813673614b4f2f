"""Service ``wyoming``: voiced's stages for Home Assistant and satellites over Wyoming.

Home Assistant's Wyoming integration can add voiced as speech-to-text (``transcribe``),
text-to-speech (``synthesize``, sentence-streamed), wake word (``detect``) and conversation
(``recognize`` -> intent, ``transcript`` -> handled) provider. A satellite (a remote microphone
and speaker) that connects and sends ``run-satellite``/``run-pipeline`` or just streams audio
becomes a site of its own: wake, VAD, barge-in and answers streamed back to it. voiced can also
dial out to ``wyoming-satellite`` servers (``satellites = [...]``), as Home Assistant does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, field_validator
from voiced_plugins.wyoming_server.info import describe
from voiced_plugins.wyoming_server.satellite import SatelliteSink
from voiced_plugins.wyoming_server.session import RequestError, Session
from wyoming.asr import Transcript as WyTranscript
from wyoming.error import Error
from wyoming.info import Info
from wyoming.satellite import RunSatellite
from wyoming.server import AsyncServer, AsyncTcpServer
from wyoming.tts import Synthesize
from wyoming.vad import VoiceStarted, VoiceStopped
from wyoming.wake import Detection

from voiced.api import events as ev
from voiced.api.events import Event, EventType
from voiced.api.hooks import hookimpl
from voiced.api.net import reached_itself

log = logging.getLogger(__name__)

Service = Literal["asr", "tts", "wake", "intent", "handle", "satellite"]
ALL_SERVICES: list[Service] = ["asr", "tts", "wake", "intent", "handle", "satellite"]
DETACH_SECONDS = 15.0  # a site's stream ends within 10 s (Pipeline.detach_site), then it is freed
WAKE_POOL = 4  # loaded wake-stage sets kept for the next detect connection (loading takes ~0.3 s)


class SatelliteTarget(BaseModel):
    """A ``wyoming-satellite`` server voiced connects to (as Home Assistant would)."""

    model_config = ConfigDict(extra="forbid")
    uri: str = Field(description="tcp://host:port of the satellite, e.g. tcp://kitchen.lan:10700")
    site_id: str | None = Field(None, description="the room; default: the satellite's own name")
    reconnect_seconds: float = Field(5.0, gt=0)


class WyomingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    uri: str = Field(
        "tcp://127.0.0.1:10700",
        description="where to listen: tcp://HOST:PORT or unix://PATH; "
        "use tcp://0.0.0.0:10700 to accept other machines",
    )
    services: list[Service] = Field(default_factory=lambda: list(ALL_SERVICES))
    wake: list[str] | None = Field(
        None, description="wake stages offered to detect requests; default: pipeline.wake"
    )
    satellites: list[SatelliteTarget] = []
    samples_per_chunk: int = Field(
        1024, ge=64, le=65536, description="audio samples per audio-chunk sent"
    )
    max_connections: int = Field(
        64, ge=1, le=10_000, description="open connections; more are answered with an error"
    )
    max_satellites: int = Field(
        32, ge=1, le=1000, description="satellite sites at once (each has its own wake/VAD)"
    )
    idle_seconds: float = Field(
        120.0,
        gt=0,
        description="a connection that is not a satellite and sends nothing for "
        "this long is closed",
    )
    read_seconds: float = Field(
        10.0, gt=0, description="time for the rest of an event once its header began"
    )
    max_event_bytes: int = Field(
        1 << 20,
        ge=4096,
        le=64 << 20,
        description="data + payload one event may declare (checked from its header)",
    )

    @field_validator("uri")
    @classmethod
    def _uri(cls, value: str) -> str:
        parsed = urlparse(value)
        if parsed.scheme == "tcp" and (parsed.hostname is None or parsed.port is None):
            raise ValueError("a tcp:// uri needs a host and a port, e.g. tcp://127.0.0.1:10700")
        if parsed.scheme not in ("tcp", "unix"):
            raise ValueError("use tcp://HOST:PORT or unix://PATH")
        return value


# What satellites hear of their own runs, as Wyoming events.
def _to_wyoming(event: Event) -> Any:
    if event.type == EventType.WAKE:
        return Detection(name=ev.Wake.from_event(event).name).event()
    if event.type == EventType.VAD_START:
        return VoiceStarted().event()
    if event.type == EventType.VAD_END:
        return VoiceStopped().event()
    if event.type == EventType.TRANSCRIPT:
        transcript = ev.Transcript.from_event(event)
        return WyTranscript(text=transcript.text, language=transcript.language).event()
    if event.type == EventType.TTS_START:
        return Synthesize(text=ev.TtsStart.from_event(event).text).event()
    if event.type == EventType.ERROR:
        error = ev.Error.from_event(event)
        return Error(text=error.message, code=error.stage).event()
    return None


class WyomingService:
    """The Wyoming server, its connections, and the satellites' sites."""

    def __init__(self, options: WyomingOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.services = set(options.services)
        self.sessions: set[Session] = set()
        self.wake_words: dict[str, str] = {}  # word -> wake stage name
        self.satellites: dict[str, Session] = {}  # site id -> live satellite connection
        self._sinks: dict[str, SatelliteSink] = {}
        self._wake_pool: list[list[Any]] = []
        self._server: AsyncServer | None = None
        self._dialers: list[asyncio.Task[None]] = []
        self.address: tuple[str, int] | None = None
        self._refused = 0  # connections refused over max_connections

    # -- lifecycle -------------------------------------------------------------------------

    def load(self) -> None:
        """Learn the wake words on offer from the configured wake stages (not loaded here)."""
        if self.app is None or "wake" not in self.services:
            return
        for name in self.wake_stage_names():
            stage = self.app.make_stage("wake", name)
            for word in _words_of(stage, name):
                self.wake_words.setdefault(word, name)

    def close(self) -> None:
        self._sinks.clear()
        for stages in self._wake_pool:
            for stage in stages:
                stage.close()
        self._wake_pool.clear()

    async def start(self) -> None:
        if self.app is None:
            raise RuntimeError("the wyoming service needs the running daemon")
        self._server = AsyncServer.from_uri(self.options.uri)
        try:
            await self._server.start(self._new_session)
        except OSError as exc:
            raise RuntimeError(
                f"wyoming: cannot listen on {self.options.uri}: {exc}; set "
                "[stages.service.wyoming] uri to a free address"
            ) from None
        listening = getattr(self._server, "_server", None)  # the asyncio server, for port 0
        if isinstance(self._server, AsyncTcpServer) and listening is not None:
            self.address = listening.sockets[0].getsockname()[:2]
        log.info(
            "wyoming: listening on %s (%s)", self.options.uri, ", ".join(sorted(self.services))
        )
        self._dialers = [
            asyncio.create_task(self._dial(target), name=f"wyoming:{target.uri}")
            for target in self.options.satellites
        ]

    async def stop(self) -> None:
        for task in self._dialers:
            task.cancel()
        await asyncio.gather(*self._dialers, return_exceptions=True)
        if self._server is not None:
            await self._server.stop()
        for session in list(self.sessions):
            await session.disconnect()

    # -- for sessions ----------------------------------------------------------------------

    def info(self) -> Info:
        return describe(self.app, self.services, self.wake_words)

    def wake_stage_names(self) -> list[str]:
        names = self.options.wake
        return list(self.app.settings.pipeline.wake if names is None else names)

    async def new_wakes(self) -> list[Any]:
        """Wake stages of a connection's own (detectors keep per-stream state)."""
        if self._wake_pool:
            return self._wake_pool.pop()
        stages = []
        for name in self.wake_stage_names():
            stage = self.app.make_stage("wake", name)
            await self.app.in_thread(stage.load)
            stages.append(stage)
        return stages

    def release_wakes(self, stages: list[Any]) -> None:
        """A finished connection's wake stages, kept loaded for the next one."""
        if len(self._wake_pool) < WAKE_POOL:
            for stage in stages:
                stage.reset()
            self._wake_pool.append(stages)
            return
        for stage in stages:
            stage.close()

    async def take_over(self, session: Session, name: str) -> None:
        """A named satellite that connects again from the same host gets its site back: its
        older connection (gone without a word, or its end not read yet) is closed first.
        (Otherwise the room would become ``name-<port>`` until that connection timed out.)"""
        old = self.satellites.get(name)
        if old is None or old is session or old.host != session.host:
            return
        log.info(
            "[%s] satellite connected again from %s: closing its older connection %s",
            name,
            session.peer,
            old.peer,
        )
        await old.disconnect()
        old.writer.close()
        with contextlib.suppress(TimeoutError):  # its own end may be freeing the site already
            await asyncio.wait_for(old.detached.wait(), DETACH_SECONDS)

    def attach(self, session: Session, name: str | None) -> str:
        """Give a satellite connection its site id (unique among live satellites); raises
        ``RequestError`` past ``max_satellites``."""
        if len(self.satellites) >= self.options.max_satellites:
            raise RequestError(
                f"{len(self.satellites)} satellites are connected, the limit (max_satellites)",
                "too-many-satellites",
            )
        base = name or f"satellite-{session.peer.rsplit('-', 1)[0]}"
        site_id = base
        if site_id in self.satellites and self.satellites[site_id] is not session:
            site_id = f"{base}-{session.peer.rsplit('-', 1)[-1]}"
        self.satellites[site_id] = session
        self.sink_for(site_id).session = session
        return site_id

    def detach(self, session: Session) -> None:
        site_id = session.site_id
        if self.satellites.get(site_id) is session:
            del self.satellites[site_id]
            session.detached.set()
            sink = self._sinks.get(site_id)
            if sink is not None and sink.session is session:
                del self._sinks[site_id]  # a satellite that comes back gets a new one
                sink.session = None

    def sink_for(self, site_id: str) -> SatelliteSink:
        if site_id not in self._sinks:
            self._sinks[site_id] = SatelliteSink(site_id, self.options.samples_per_chunk)
        return self._sinks[site_id]

    @hookimpl
    def voiced_event(self, event: Event) -> None:
        session = self.satellites.get(event.site_id)
        if session is None or session.closed:
            return
        message = _to_wyoming(event)
        if message is not None:
            session.send_soon(message)

    # -- internals -------------------------------------------------------------------------

    def _new_session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Session:
        if len(self.sessions) >= self.options.max_connections:
            self._refused += 1
            if self._refused in (1, 10) or self._refused % 1000 == 0:  # no log flood
                log.warning(
                    "wyoming: %d connection(s) refused so far: %d open, the limit "
                    "(max_connections)",
                    self._refused,
                    len(self.sessions),
                )
            return Session(reader, writer, self, refuse="too many connections (max_connections)")
        _keepalive(writer)
        session = Session(reader, writer, self)
        self.sessions.add(session)
        return session

    async def _dial(self, target: SatelliteTarget) -> None:
        """Keep a connection to a satellite server; reconnect when it drops."""
        failures = 0
        while True:
            try:
                reader, writer = await _open(target.uri)
            except (ConnectionError, OSError) as exc:
                failures += 1
                loud = failures in (1, 10) or failures % 100 == 0
                level = logging.INFO if loud else logging.DEBUG
                log.log(
                    level,
                    "wyoming: satellite %s unreachable (%s); retrying every %g s",
                    target.uri,
                    exc,
                    target.reconnect_seconds,
                )
                await asyncio.sleep(target.reconnect_seconds)
                continue
            failures = 0
            _keepalive(writer)
            session = Session(reader, writer, self)
            session.satellite_name = target.site_id
            session.dialed = True
            self.sessions.add(session)
            log.info("wyoming: connected to satellite %s", target.uri)
            try:
                await session.send(RunSatellite().event())
                await session.run()
            except (ConnectionError, OSError) as exc:
                log.info("wyoming: satellite %s: %s", target.uri, exc)
            log.info("wyoming: satellite %s disconnected", target.uri)
            await asyncio.sleep(target.reconnect_seconds)


def _keepalive(writer: asyncio.StreamWriter) -> None:
    """Notice a satellite that vanished without closing (power cut, Wi-Fi gone) in ~25 s."""
    sock = writer.get_extra_info("socket")
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 10)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 5)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)


async def _open(uri: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    parsed = urlparse(uri)
    if parsed.scheme == "unix":
        return await asyncio.open_unix_connection(parsed.path)
    if parsed.scheme == "tcp" and parsed.hostname and parsed.port:
        reader, writer = await asyncio.open_connection(parsed.hostname, parsed.port)
        refuse_self_connection(writer, uri)
        return reader, writer
    raise ConnectionError(f"unusable satellite uri {uri!r}: use tcp://HOST:PORT or unix://PATH")


def refuse_self_connection(writer: asyncio.StreamWriter, uri: str) -> None:
    """Close a connection that reached itself (``voiced.api.net``): it would hold the
    satellite's port and echo voiced's own events back."""
    sock = writer.get_extra_info("socket")
    if sock is not None and reached_itself(sock):
        writer.close()
        raise ConnectionError(f"nothing listens on {uri} (the connection reached itself)")


def _words_of(stage: Any, stage_name: str) -> list[str]:
    """The wake words a wake stage listens for (``Wake.names``), else the stage's name."""
    names = getattr(stage, "names", None)  # optional in third-party wake stages
    return [str(n) for n in names] if names else [stage_name]


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "service",
        "wyoming",
        WyomingService,
        options=WyomingOptions,
        description="Wyoming server: Home Assistant STT/TTS/wake/conversation, satellites",
    )
