"""Cuts a stream of audio into utterances with a frame-level voice detector."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from voiced.audio import PIPELINE_FORMAT
from voiced.config import VadConfig
from voiced.stages import Vad

BYTES_PER_SAMPLE = PIPELINE_FORMAT.width


@dataclass(frozen=True)
class SpeechStarted:
    stream_time: float  # seconds of audio since the stream began


@dataclass(frozen=True)
class SpeechEnded:
    stream_time: float
    audio: bytes  # the whole utterance, pre-roll included
    reason: str  # silence | max-length | end-of-stream | early-commit
    pause: int = 0  # the number of the pause it ended in (SpeechPaused.pause)

    @property
    def seconds(self) -> float:
        return len(self.audio) / PIPELINE_FORMAT.bytes_per_second


@dataclass(frozen=True)
class SpeechPaused:
    """A pause of ``speculate_pause`` inside an utterance: its audio so far, to transcribe
    speculatively. ``pause`` names this pause: it is stale once speech resumes."""

    stream_time: float
    audio: bytes
    pause: int
    silence: float = 0.0  # seconds of silence at the end of ``audio``


SegmentEvent = SpeechStarted | SpeechPaused | SpeechEnded


class UtteranceSegmenter:
    """Speech starts after ``speech_seconds`` of speech and ends after ``silence_seconds`` of
    silence or at ``max_command_seconds``, so endless audio still yields bounded utterances.

    With ``early_commit``, a shorter pause inside the utterance (``speculate_pause``) gives
    ``SpeechPaused``; once it has lasted ``early_commit_pause`` (``paused``), the site may
    ``commit()`` the utterance before the full silence has passed.
    """

    def __init__(self, vad: Vad, config: VadConfig) -> None:
        self.vad = vad
        self.config = config
        self.frame_bytes = vad.frame_samples * BYTES_PER_SAMPLE
        self.frame_seconds = vad.frame_samples / PIPELINE_FORMAT.rate
        self._pending = b""
        self._samples = 0
        self._pre_roll_frames = max(1, round(config.pre_roll_seconds / self.frame_seconds))
        # Speech needed to start may be spread over a while (short pauses between words):
        # keep enough history to reach back to where that speech began, plus the pre-roll.
        history = self._pre_roll_frames + round(3.0 / self.frame_seconds)
        self._history: deque[bytes] = deque(maxlen=history)
        self.reset()

    @property
    def stream_time(self) -> float:
        return self._samples / PIPELINE_FORMAT.rate

    @property
    def in_speech(self) -> bool:
        return self._in_speech

    @property
    def pause(self) -> int:
        """The current pause's number; it changes whenever speech resumes or the utterance ends."""
        return self._pause

    @property
    def silence(self) -> float:
        """Seconds of silence since the last speech frame of the utterance in progress."""
        return self._silence_run if self._in_speech else 0.0

    @property
    def paused(self) -> bool:
        """In an utterance, and silent for at least ``early_commit_pause``: it may end early."""
        return self._in_speech and self._silence_run >= self.config.early_commit_pause

    @property
    def pausing(self) -> bool:
        """In an utterance, and silent for at least ``speculate_pause``: a pause to speculate on."""
        return self._in_speech and self._silence_run >= self.speculate_after

    @property
    def speculate_after(self) -> float:
        """Silence that starts a speculative pass: ``speculate_pause``, at most the commit's."""
        return min(self.config.speculate_pause, self.config.early_commit_pause)

    @property
    def endpoint_silence(self) -> float:
        """The silence an utterance ending in silence holds at its end (whole frames)."""
        frames = math.ceil(self.config.silence_seconds / self.frame_seconds - 1e-6)
        return frames * self.frame_seconds

    def snapshot(self) -> SpeechPaused:
        """The utterance so far, as a pause to speculate on (call only while ``in_speech``)."""
        return SpeechPaused(
            self.stream_time, b"".join(self._utterance), self._pause, self._silence_run
        )

    def utterance_since(self, offset: int) -> bytes:
        """The utterance in progress from byte ``offset`` (a multiple of whole frames) on:
        what a streaming ASR has not had yet."""
        return b"".join(self._utterance[offset // self.frame_bytes :])

    def commit(self, reason: str = "early-commit") -> SpeechEnded:
        """End the utterance in progress now (its audio so far, trailing silence included)."""
        return self._end(reason)

    def reset(self) -> None:
        """Forget any partial utterance (after a wake word, a mute, a barge-in)."""
        self._in_speech = False
        self._speech_run = 0.0
        self._silence_run = 0.0
        self._utterance: list[bytes] = []
        self._lead_frames = 0  # frames since the first speech frame of the pending start
        self._history.clear()
        self._pause = getattr(self, "_pause", 0) + 1

    def feed(self, pcm: bytes) -> list[SegmentEvent]:
        events: list[SegmentEvent] = []
        data = self._pending + pcm
        usable = len(data) - len(data) % self.frame_bytes
        for offset in range(0, usable, self.frame_bytes):
            event = self._frame(data[offset : offset + self.frame_bytes])
            if event is not None:
                events.append(event)
        self._pending = data[usable:]
        return events

    def flush(self) -> list[SegmentEvent]:
        """End of stream: an utterance in progress ends here."""
        self._pending = b""
        if not self._in_speech:
            return []
        return [self._end("end-of-stream")]

    def _frame(self, frame: bytes) -> SegmentEvent | None:
        self._samples += self.vad.frame_samples
        is_speech = self.vad.speech_probability(frame) >= self.config.threshold
        if not self._in_speech:
            self._history.append(frame)
            if self._speech_run > 0 or is_speech:
                self._lead_frames += 1
            if is_speech:
                self._speech_run += self.frame_seconds
                self._silence_run = 0.0
            else:
                self._silence_run += self.frame_seconds
                if self._silence_run >= self.config.speech_seconds:
                    self._speech_run = 0.0  # isolated blips don't add up to a command
                    self._lead_frames = 0
            if self._speech_run >= self.config.speech_seconds:
                keep = min(len(self._history), self._lead_frames + self._pre_roll_frames)
                self._in_speech = True
                self._silence_run = 0.0
                self._utterance = list(self._history)[-keep:]
                self._history.clear()
                self._lead_frames = 0
                return SpeechStarted(self.stream_time)
            return None
        self._utterance.append(frame)
        if is_speech:
            if self._silence_run >= self.speculate_after:
                self._pause += 1  # speech resumed: what was heard in that pause is stale
            self._silence_run = 0.0
        else:
            before = self._silence_run
            self._silence_run += self.frame_seconds
            pause = self.speculate_after
            if (
                self.config.early_commit
                and before < pause <= self._silence_run < self.config.silence_seconds
            ):
                return self.snapshot()
        if self._silence_run >= self.config.silence_seconds:
            return self._end("silence")
        if len(self._utterance) * self.frame_seconds >= self.config.max_command_seconds:
            return self._end("max-length")
        return None

    def _end(self, reason: str) -> SpeechEnded:
        ended = SpeechEnded(self.stream_time, b"".join(self._utterance), reason, self._pause)
        self.reset()
        return ended
