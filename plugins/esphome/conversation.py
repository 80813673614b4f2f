"""A turn of Home Assistant's Assist pipeline at a site: the microphone streamed to Home
Assistant (after the wake word, or after an announcement that starts a conversation) until its
VAD hears the end of speech, then its answer fetched and played on the site's speaker."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from aioesphomeapi import api_pb2 as api
from aioesphomeapi.model import VoiceAssistantCommandFlag, VoiceAssistantEventType
from google.protobuf.message import Message

from voiced.api.audio import AudioChunk

if TYPE_CHECKING:
    from .connection import Connection
    from .device import Device

log = logging.getLogger(__name__)

MAX_TURN_SECONDS = 30.0  # a turn still listening (or not answered) this long is ended
EventKind = VoiceAssistantEventType
GIVES_BACK_THE_MIC = (
    EventKind.VOICE_ASSISTANT_STT_VAD_END,
    EventKind.VOICE_ASSISTANT_STT_END,
    EventKind.VOICE_ASSISTANT_ERROR,
    EventKind.VOICE_ASSISTANT_RUN_END,
)


class Conversation:
    """At most one pipeline turn per device at a time."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.connection: Connection | None = None
        self.streaming = False
        self.run_ended = False
        self.continue_conversation = False
        self.speaking: asyncio.Task[None] | None = None
        self._limit: asyncio.TimerHandle | None = None

    @property
    def active(self) -> bool:
        return self.connection is not None

    def start(
        self, connection: Connection | None = None, reason: str = "wake", wake_word_phrase: str = ""
    ) -> bool:
        """Ask Home Assistant to run its pipeline on this site's microphone; False when no
        Home Assistant is connected or a turn is already on."""
        connection = connection or self.device.voice_client()
        if connection is None or not connection.voice_subscribed:
            self.device.emit("error", stage="pipeline", message="no Home Assistant connected")
            return False
        if self.active:
            return False
        self.connection, self.streaming, self.run_ended = connection, False, False
        self.continue_conversation = False
        connection.send(
            api.VoiceAssistantRequest(
                start=True,
                flags=int(VoiceAssistantCommandFlag.USE_VAD),
                audio_settings=api.VoiceAssistantAudioSettings(),
                wake_word_phrase=wake_word_phrase,
            )
        )
        loop = asyncio.get_running_loop()
        self._limit = loop.call_later(MAX_TURN_SECONDS, self._too_long)
        self.device.emit("pipeline-start", reason=reason)
        return True

    def end(self, reason: str) -> None:
        """Stop the turn: the microphone comes back, Home Assistant is told to stop."""
        connection = self.connection
        if connection is None:
            return
        self._give_back()
        if not self.run_ended:
            connection.send(api.VoiceAssistantRequest(start=False))
        self._done()
        self.device.emit("pipeline-end", reason=reason)

    def lost(self, connection: Connection) -> None:
        if connection is self.connection:
            self._give_back()
            self._done()

    # -- from Home Assistant ---------------------------------------------------------------

    def on_message(self, connection: Connection, message: Message) -> bool:
        if isinstance(message, api.VoiceAssistantResponse):
            if connection is self.connection:
                self._started(message)
            return True
        if isinstance(message, api.VoiceAssistantEventResponse):
            if connection is self.connection:
                self._on_event(
                    EventKind(message.event_type), {d.name: d.value for d in message.data}
                )
            return True
        return False

    def _started(self, message: Any) -> None:
        if message.error:
            self.end("refused by Home Assistant")
            return
        if not self.device.app.lend_audio(self.device.site_id, self._send_audio):
            self.device.emit("error", stage="pipeline", message="the site has no microphone")
            self.end("no microphone")
            return
        self.streaming = True

    def _send_audio(self, chunk: AudioChunk) -> None:
        if self.streaming and self.connection is not None:
            self.connection.send(api.VoiceAssistantAudio(data=chunk.audio))

    def _on_event(self, kind: EventKind, data: dict[str, str]) -> None:
        name = kind.name.removeprefix("VOICE_ASSISTANT_").lower().replace("_", "-")
        self.device.emit(f"ha-{name}", **{k: v[:500] for k, v in data.items()})
        if kind in GIVES_BACK_THE_MIC:
            self._give_back()
        if kind == EventKind.VOICE_ASSISTANT_INTENT_END:
            self.continue_conversation = data.get("continue_conversation") == "1"
        elif kind == EventKind.VOICE_ASSISTANT_TTS_END and data.get("url"):
            self.speaking = self.device.spawn(self._speak(data["url"]))
        elif kind == EventKind.VOICE_ASSISTANT_RUN_END:
            self.run_ended = True
            if self.speaking is None or self.speaking.done():
                self._done()

    async def _speak(self, url: str) -> None:
        """Home Assistant's answer on the site's speaker; then, if it asked something, the
        next turn."""
        connection = self.connection
        played = await self.device.play_url([url], "answer")
        if connection is not None:
            connection.send(api.VoiceAssistantAnnounceFinished(success=played))
        if self.run_ended and self.connection is connection:
            self._done()
        if played and self.continue_conversation and connection is not None:
            self.start(connection, reason="continue-conversation")

    def _give_back(self) -> None:
        if self.streaming:
            self.streaming = False
            self.device.app.lend_audio(self.device.site_id, None)

    def _done(self) -> None:
        """The turn is over: the next may start."""
        self.connection = None
        if self._limit is not None:
            self._limit.cancel()
            self._limit = None

    def _too_long(self) -> None:
        """Still listening, or no answer from Home Assistant: the turn ends (an answer being
        played finishes the turn itself)."""
        self._limit = None
        if self.speaking is not None and not self.speaking.done():
            return
        what = "heard no end of speech" if self.streaming else "did not finish the turn"
        log.info(
            "esphome %s: Home Assistant %s in %g s; stopped",
            self.device.name,
            what,
            MAX_TURN_SECONDS,
        )
        self.end(what)
