"""One voiced site as one ESPHome voice-assistant device: its port, its connections, what it
plays for Home Assistant, its entities' commands."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from aioesphomeapi import api_pb2 as api
from aioesphomeapi.model import MediaPlayerCommand, VoiceAssistantFeature
from google.protobuf.message import Message

from voiced import __version__
from voiced.api.audio import AudioChunk, AudioFormatError
from voiced.api.events import Event

from .connection import Connection
from .conversation import Conversation
from .entities import (
    MEDIA_PLAYER_KEY,
    MUTE_KEY,
    SENSITIVITY_KEY,
    SENSITIVITY_OPTIONS,
    DeviceState,
    entity_states,
)
from .media import MediaError, decode, fetch
from .options import DeviceOptions, EsphomeOptions
from .timers import Timers

log = logging.getLogger(__name__)

ESPHOME_VERSION = "2025.4.0"  # the firmware release whose API this server speaks
EVENT_TYPE = "esphome"
FEATURES = (
    VoiceAssistantFeature.VOICE_ASSISTANT
    | VoiceAssistantFeature.API_AUDIO
    | VoiceAssistantFeature.ANNOUNCE
    | VoiceAssistantFeature.START_CONVERSATION
    | VoiceAssistantFeature.TIMERS
)


class Device:
    """Serves one site to Home Assistant on its own port."""

    def __init__(self, device: DeviceOptions, options: EsphomeOptions, app: Any) -> None:
        self.config = device
        self.options = options
        self.app = app
        self.site_id = device.site_id
        self.name = device.node_name()
        self.state = DeviceState()
        self.connections: set[Connection] = set()
        self.wake_words: dict[str, str] = {}  # id -> phrase, from the site's wake stages
        self.active_wake_words: list[str] = []
        self.conversation = Conversation(self)
        self.timers = Timers(self)
        self._media = 0  # how many media plays began: the newest owns the player's state
        self.refused = 0  # clients dropped for bad frames
        self.address: tuple[str, int] | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        try:
            self._server = await asyncio.start_server(
                self._accept, self.options.host, self.config.port, limit=1 << 16
            )
        except OSError as exc:
            raise RuntimeError(
                f"esphome: cannot listen on {self.options.host}:{self.config.port} for site "
                f"{self.site_id!r}: {exc}; give the device a free port"
            ) from None
        self.address = self._server.sockets[0].getsockname()[:2]
        log.info(
            "esphome: site %s is device %s on %s:%d (pipeline: %s)",
            self.site_id,
            self.name,
            *self.address,
            self.config.pipeline,
        )

    async def stop(self) -> None:
        self.conversation.end("shutdown")
        self.timers.stop("shutdown")
        if self._server is not None:
            self._server.close()
        for connection in list(self.connections):
            connection.send(api.DisconnectRequest())
            connection.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.connections) >= self.options.max_connections:
            log.warning(
                "esphome %s: %d connections open, the limit; refused another",
                self.name,
                len(self.connections),
            )
            writer.close()
            return
        connection = Connection(self, reader, writer)
        self.connections.add(connection)
        self.spawn(connection.serve())
        self.emit("connected", peer=connection.peer)

    def forget(self, connection: Connection) -> None:
        if connection in self.connections:
            self.connections.discard(connection)
            self.conversation.lost(connection)
            self.emit("disconnected", peer=connection.peer)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- what Home Assistant sees ----------------------------------------------------------

    def device_info(self) -> Message:
        return api.DeviceInfoResponse(
            uses_password=False,
            name=self.name,
            friendly_name=self.config.friendly_name or f"voiced {self.site_id}",
            mac_address=self.config.mac_address(),
            esphome_version=ESPHOME_VERSION,
            model="voiced site",
            manufacturer="voiced",
            project_name="voiced.voiced",
            project_version=__version__,
            voice_assistant_feature_flags=int(FEATURES),
            api_encryption_supported=self.config.encryption_key is not None,
        )

    def broadcast_states(self) -> None:
        for connection in list(self.connections):
            connection.send(*entity_states(self.state))

    def voice_client(self) -> Connection | None:
        """The connection that subscribed to the voice assistant (Home Assistant's)."""
        return next((c for c in self.connections if c.voice_subscribed and not c.closed), None)

    def emit(self, what: str, run_id: str | None = None, **data: Any) -> None:
        """An ``esphome`` event for MQTT and the log (``voiced/<site>/event/esphome``)."""
        self.app.emit(Event(EVENT_TYPE, run_id, self.site_id, {"event": what, **data}))

    # -- messages from Home Assistant ------------------------------------------------------

    def on_message(self, connection: Connection, message: Message) -> None:
        if isinstance(message, api.VoiceAssistantConfigurationRequest):
            connection.send(self._configuration())
        elif isinstance(message, api.VoiceAssistantSetConfiguration):
            self._set_wake_words([str(w) for w in message.active_wake_words])
        elif isinstance(message, api.VoiceAssistantAnnounceRequest):
            self.spawn(self._announce(connection, message))
        elif isinstance(message, api.MediaPlayerCommandRequest):
            self._media_command(message)
        elif isinstance(message, api.SwitchCommandRequest) and message.key == MUTE_KEY:
            self._set_muted(bool(message.state))
        elif isinstance(message, api.SelectCommandRequest) and message.key == SENSITIVITY_KEY:
            self._set_sensitivity(str(message.state))
        elif isinstance(message, api.VoiceAssistantTimerEventResponse):
            self.timers.on_event(message)
        elif not self.conversation.on_message(connection, message):
            log.debug("esphome %s: %s not handled", self.name, type(message).__name__)

    def _configuration(self) -> Message:
        words = [
            api.VoiceAssistantWakeWord(id=word, wake_word=phrase, trained_languages=["en"])
            for word, phrase in self.wake_words.items()
        ]
        return api.VoiceAssistantConfigurationResponse(
            available_wake_words=words,
            active_wake_words=self.active_wake_words,
            max_active_wake_words=max(1, len(words)),
        )

    def _set_wake_words(self, words: list[str]) -> None:
        active = [w for w in words if w in self.wake_words]
        self.active_wake_words = active
        applied = self.app.set_wake_words(self.site_id, set(active))
        self.emit("wake-words", active=active, applied=applied)

    def _set_sensitivity(self, option: str) -> None:
        level = SENSITIVITY_OPTIONS.get(option)
        if level is None:
            log.warning("esphome %s: no wake word sensitivity %r", self.name, option[:100])
            self.broadcast_states()  # the select shows what is in force
            return
        self.state.wake_sensitivity = level
        thresholds = self.app.set_wake_sensitivity(self.site_id, level)
        self.emit("wake-sensitivity", level=level, thresholds=thresholds)
        self.broadcast_states()

    def _set_muted(self, muted: bool) -> None:
        try:
            self.app.set_muted(muted, self.site_id)
        except KeyError:  # the site has no microphone right now: remembered for the entity
            self.state.muted = muted
            self.broadcast_states()

    def on_muted(self, muted: bool) -> None:
        """voiced's own mute changed (MQTT, the switch): the switch shows it."""
        if muted != self.state.muted:
            self.state.muted = muted
            self.broadcast_states()
        if muted:
            self.conversation.end("muted")

    def _media_command(self, message: Any) -> None:
        if message.has_volume:
            self.state.volume = max(0.0, min(1.0, float(message.volume)))
        if message.has_command:
            self._player_command(message.command)
        if message.has_media_url and message.key == MEDIA_PLAYER_KEY:
            self.spawn(self.play_url([message.media_url], "media", bool(message.announcement)))
        self.broadcast_states()

    def _player_command(self, command: int) -> None:
        if command == MediaPlayerCommand.STOP:
            self.timers.stop("media player stop")
            self.state.paused = False
            with contextlib.suppress(KeyError):  # nothing ever ran at a site not connected
                self.app.cancel(self.site_id)
        elif command in (MediaPlayerCommand.PAUSE, MediaPlayerCommand.PLAY):
            paused = command == MediaPlayerCommand.PAUSE
            if self.app.pause_media(self.site_id, paused):
                self.state.paused = paused
                self.emit("media-paused" if paused else "media-resumed")
        elif command in (MediaPlayerCommand.MUTE, MediaPlayerCommand.UNMUTE):
            self.state.sound_muted = command == MediaPlayerCommand.MUTE

    async def _announce(self, connection: Connection, message: Any) -> None:
        urls = [u for u in (message.preannounce_media_id, message.media_id) if u]
        self.emit("announce", text=message.text[:500], conversation=message.start_conversation)
        played = await self.play_url(urls, "announce", announcement=True)
        connection.send(api.VoiceAssistantAnnounceFinished(success=played))
        if played and message.start_conversation:
            self.conversation.start(connection, reason="start-conversation")

    # -- playing ---------------------------------------------------------------------------

    async def play_url(self, urls: list[str], reason: str, announcement: bool = False) -> bool:
        """Fetch, decode and play media at the site; True once played to the end. Media
        (``reason`` "media", no announcement) plays in the background: lowered while the site
        listens or speaks, not stopped by a wake word, replaced by the next media."""
        audio: list[AudioChunk] = []
        background = reason == "media" and not announcement
        volume = 1.0 if background else self.state.volume  # media's follows the player's
        for url in urls:
            try:
                body = await self.app.in_thread(
                    fetch, url, self.options.max_media_bytes, self.options.media_seconds
                )
                audio += await self.app.in_thread(decode, body, volume)
            except (MediaError, AudioFormatError) as exc:
                log.warning("esphome %s: %s: %s", self.name, reason, exc)
                self.emit("error", stage=reason, message=str(exc))
        if not audio:
            return False
        if self.state.sound_muted:
            return True  # muted: played, silently
        if not background:
            return await self._foreground(audio, reason, announcement)
        self._media += 1
        playing = self._media
        self.state.playing, self.state.paused = True, False
        self.broadcast_states()
        try:
            return await self.app.play(
                audio, self.site_id, reason, background=True, volume=self._media_volume
            )
        finally:
            if playing == self._media:  # no newer media replaced this one
                self.state.playing = self.state.paused = False
                self.broadcast_states()

    def _media_volume(self) -> float:
        """The player's volume as media plays: its slider and its mute, as they are now."""
        return 0.0 if self.state.sound_muted else self.state.volume

    async def _foreground(self, audio: list[AudioChunk], reason: str, announcement: bool) -> bool:
        """An announcement or Home Assistant's answer: over any media, which is lowered."""
        shown = "announcing" if announcement else "answering"
        setattr(self.state, shown, True)
        self.broadcast_states()
        try:
            return await self.app.play(audio, self.site_id, reason)
        finally:
            setattr(self.state, shown, False)
            self.broadcast_states()
