"""One listening place (a microphone, a file, a satellite): its conversation state machine.

idle -> (wake) -> listening -> thinking -> speaking -> idle, with a no-speech timeout after
the wake word, barge-in while speaking, follow-up listening after a question, and mute.
Time here is stream time (seconds of audio heard), so files replay the same at any speed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from voiced.audio import AudioChunk
from voiced.config import ConversationConfig
from voiced.context import RunContext
from voiced.events import Event, EventType
from voiced.segmenter import SpeechEnded, SpeechStarted, UtteranceSegmenter
from voiced.stages import WakeDetection

log = logging.getLogger(__name__)


@dataclass
class Utterance:
    context: RunContext
    audio: bytes
    ended_at: float  # monotonic time speech ended
    reason: str


class Site:
    """Feeds audio through wake and VAD and hands finished utterances to ``submit``."""

    def __init__(
        self,
        site_id: str,
        segmenter: UtteranceSegmenter,
        wakes: list[Any],
        conversation: ConversationConfig,
        emit: Callable[[Event], None],
        submit: Callable[[Utterance], Any],
        new_context: Callable[[str], RunContext],
        sinks: list[Any] | None = None,
    ) -> None:
        self.site_id = site_id
        self.segmenter = segmenter
        self.wakes = wakes
        self.conversation = conversation
        self.emit = emit
        self.submit = submit
        self.new_context = new_context
        self.sinks = sinks
        self.muted = conversation.muted
        self.current: RunContext | None = None  # the run being listened to
        self.awake_until: float | None = None  # stream time; None = not awake
        self.tasks: dict[str, asyncio.Task[Any]] = {}  # runs past ASR, by run id
        self.thinking = 0
        self.speaking = 0
        self.state = "idle"

    # -- audio in ---------------------------------------------------------------------------

    async def feed(self, chunk: AudioChunk) -> None:
        if self.muted:
            return
        now = self.segmenter.stream_time
        if self.wakes:
            detection = self._detect(chunk)
            if detection is not None:
                self._on_wake(detection, now)
                return
            if self.awake_until is None:
                return
        elif self.speaking and self.conversation.barge_in != "speech":
            return  # don't transcribe our own answer coming back through the microphone
        for event in self.segmenter.feed(chunk.audio):
            if isinstance(event, SpeechStarted):
                self._on_speech_start(event)
            else:
                await self._on_speech_end(event)
        if (
            self.awake_until is not None
            and not self.segmenter.in_speech
            and self.segmenter.stream_time > self.awake_until
        ):
            self._end_listening("no-speech-timeout")

    async def finish(self) -> None:
        """End of stream: an utterance in progress is submitted as it is."""
        for event in self.segmenter.flush():
            if isinstance(event, SpeechEnded):
                await self._on_speech_end(event)
        if self.current is not None:
            self._end_listening("end-of-stream")

    # -- control ----------------------------------------------------------------------------

    def set_muted(self, muted: bool) -> None:
        if muted == self.muted:
            return
        self.muted = muted
        self.segmenter.reset()
        for wake in self.wakes:
            wake.reset()
        if muted and self.current is not None:
            self._end_listening("muted")
        self.emit(Event(EventType.MUTED, None, self.site_id, {"muted": muted}))
        self.update_state()

    def listen(self, reason: str = "command", seconds: float | None = None) -> RunContext:
        """Start listening without a wake word (MQTT listen, follow-up)."""
        if self.current is None:
            self.current = self.new_context(self.site_id)
            self.emit(
                Event(EventType.RUN_START, self.current.run_id, self.site_id, {"reason": reason})
            )
        window = seconds if seconds is not None else self.conversation.wake_timeout
        self.awake_until = self.segmenter.stream_time + window
        self.update_state()
        return self.current

    def cancel(self, reason: str = "cancelled") -> int:
        """Stop every run in flight here (playback included); returns how many."""
        cancelled = 0
        for run_id, task in list(self.tasks.items()):
            if not task.done():
                task.cancel(reason)
                cancelled += 1
                log.info("[%s] run %s cancelled: %s", self.site_id, run_id[:8], reason)
        if self.current is not None:
            self._end_listening(reason)
        return cancelled

    def update_state(self) -> None:
        if self.speaking:
            state = "speaking"
        elif self.thinking:
            state = "thinking"
        elif self.current is not None or (self.awake_until is not None):
            state = "listening"
        else:
            state = "idle"
        if state != self.state:
            self.state = state
            self.emit(Event(EventType.STATE, None, self.site_id, {"state": state}))

    # -- internals --------------------------------------------------------------------------

    def _detect(self, chunk: AudioChunk) -> WakeDetection | None:
        listening_for_barge_in = (
            self.speaking or self.thinking
        ) and self.conversation.barge_in == "wake"
        if self.awake_until is not None and not listening_for_barge_in:
            return None
        for wake in self.wakes:
            detection = wake.process(chunk)
            if detection is not None:
                for other in self.wakes:
                    other.reset()
                return detection
        return None

    def _on_wake(self, detection: WakeDetection, now: float) -> None:
        if self.speaking or self.thinking:
            self.cancel("barge-in")
        if self.current is not None:
            self._end_listening("wake-again")
        self.segmenter.reset()
        context = self.listen(reason="wake")
        self.emit(
            Event(
                EventType.WAKE,
                context.run_id,
                self.site_id,
                {
                    "name": detection.name,
                    "score": round(float(detection.score), 4),
                    "stream_time": round(now, 3),
                    **detection.data,
                },
            )
        )

    def _on_speech_start(self, event: SpeechStarted) -> None:
        if self.speaking and self.conversation.barge_in == "speech":
            self.cancel("barge-in")
        if self.current is None:
            self.current = self.new_context(self.site_id)
            self.emit(
                Event(EventType.RUN_START, self.current.run_id, self.site_id, {"reason": "speech"})
            )
        self.emit(
            Event(
                EventType.VAD_START,
                self.current.run_id,
                self.site_id,
                {"stream_time": round(event.stream_time, 3)},
            )
        )
        self.update_state()

    async def _on_speech_end(self, event: SpeechEnded) -> None:
        import time

        context = self.current or self.new_context(self.site_id)
        self.current = None
        self.awake_until = None
        self.emit(
            Event(
                EventType.VAD_END,
                context.run_id,
                self.site_id,
                {
                    "stream_time": round(event.stream_time, 3),
                    "seconds": round(event.seconds, 3),
                    "reason": event.reason,
                },
            )
        )
        self.thinking += 1
        self.update_state()
        await self.submit(Utterance(context, event.audio, time.monotonic(), event.reason))

    def _end_listening(self, reason: str) -> None:
        context, self.current, self.awake_until = self.current, None, None
        if context is not None:
            self.emit(Event(EventType.RUN_END, context.run_id, self.site_id, {"reason": reason}))
        self.update_state()
