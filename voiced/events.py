"""Pipeline events: a small envelope, and one typed payload per event type.

This module is the one place event payloads are defined. ``Event`` is the envelope every
``voiced_event`` observer gets (type, run id, site id, time, ``data``); ``data`` is generated
from the event type's payload dataclass below, so its JSON form (``Event.to_json()``, the
MQTT ``voiced/<site>/event/<type>`` payloads) is exactly these fields. Consumers parse it
back with ``Payload.from_event(event)``.

Conventions: times are seconds, rounded; ``via`` is set (to ``"wyoming"``) only for runs a
Wyoming request started, and left out otherwise; ``extra`` holds an engine's or plugin's own
keys (merged flat into ``data``).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import MISSING, dataclass, field, fields
from enum import StrEnum
from typing import Any, ClassVar, Self, TextIO

from voiced.limits import clip


class EventType(StrEnum):
    READY = "ready"
    STAGE_LOADED = "stage-loaded"
    ENGINE_FALLBACK = "engine-fallback"
    VOICE_LANGUAGE = "voice-language"
    RUN_START = "run-start"
    WAKE = "wake"
    WAKE_IGNORED = "wake-ignored"
    VAD_START = "vad-start"
    VAD_END = "vad-end"
    TRANSCRIPT = "transcript"
    INTENT = "intent"
    INTENT_NOT_RECOGNIZED = "intent-not-recognized"
    INTENT_REFUSED = "intent-refused"
    SPEAKER_ENROLLED = "speaker-enrolled"
    SPEAKER_FORGOTTEN = "speaker-forgotten"
    HANDLED = "handled"
    TTS_START = "tts-start"
    TTS_AUDIO = "tts-audio"
    TTS_END = "tts-end"
    PLAYBACK_END = "playback-end"
    RUN_END = "run-end"
    STATE = "state"
    MUTED = "muted"
    TIMER = "timer"
    ERROR = "error"
    RELOAD = "reload"
    SHUTDOWN = "shutdown"


@dataclass(frozen=True)
class Event:
    """One step of the pipeline: what happened, in which run, at which site, when."""

    type: str
    run_id: str | None = None
    site_id: str = "default"
    data: dict[str, Any] = field(default_factory=dict)
    t: float = field(default_factory=time.time)
    mono: float = field(default_factory=time.monotonic)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": str(self.type),
            "run_id": self.run_id,
            "site_id": self.site_id,
            "t": round(self.t, 6),
            "data": self.data,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=_json_default, ensure_ascii=False)


def print_json_line(event: Event, stream: TextIO | None = None) -> None:
    """One event as a JSON line (``voiced run --events json``, the log stage's json format)."""
    stream = stream or sys.stdout
    stream.write(event.to_json() + "\n")
    stream.flush()


def _json_default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return str(value)


def omitted(default: Any = None) -> Any:
    """A field left out of ``data`` while it is None (e.g. ``via``)."""
    return field(default=default, metadata={"omit_none": True})


EXTRA = {"extra": True}
"""Metadata of the field whose keys are merged flat into ``data`` (an engine's own facts)."""


@dataclass(frozen=True)
class Payload:
    """Base of the payloads: ``data`` is generated from the dataclass fields."""

    TYPE: ClassVar[EventType]

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        merged: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("extra"):
                merged = value
            elif not (f.metadata.get("omit_none") and value is None):
                data[f.name] = clip(value) if isinstance(value, str) else value
        return {**data, **{k: v for k, v in merged.items() if k not in data}}

    def event(self, run_id: str | None = None, site_id: str = "default") -> Event:
        return Event(self.TYPE, run_id, site_id, self.to_data())

    @classmethod
    def from_event(cls, event: Event) -> Self:
        """The payload of an event of this type; KeyError names a missing required field."""
        if event.type != cls.TYPE:
            raise ValueError(f"a {event.type} event is not {cls.TYPE}")
        kwargs: dict[str, Any] = {}
        named = set()
        extra_field = None
        for f in fields(cls):
            if f.metadata.get("extra"):
                extra_field = f.name
                continue
            named.add(f.name)
            if f.name in event.data:
                kwargs[f.name] = event.data[f.name]
            elif f.default is MISSING and f.default_factory is MISSING:
                raise KeyError(f"{event.type} event without {f.name!r}")
        if extra_field is not None:
            kwargs[extra_field] = {k: v for k, v in event.data.items() if k not in named}
        return cls(**kwargs)


# -- daemon lifecycle ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Ready(Payload):
    """Every stage loaded and warmed up; the daemon takes audio."""

    TYPE = EventType.READY
    asr: list[str]
    tts: list[str]
    sources: list[str]


@dataclass(frozen=True)
class StageLoaded(Payload):
    """An engine of a chain (asr, tts) loaded; ``extra`` is the engine's ``info``."""

    TYPE = EventType.STAGE_LOADED
    kind: str
    name: str
    seconds: float
    extra: dict[str, Any] = field(default_factory=dict, metadata=EXTRA)


@dataclass(frozen=True)
class EngineFallback(Payload):
    """An engine failed to load (``phase`` "load") or to serve a call ("run"); ``next`` serves."""

    TYPE = EventType.ENGINE_FALLBACK
    kind: str
    engine: str
    reason: str
    phase: str
    next: str | None


@dataclass(frozen=True)
class VoiceLanguage(Payload):
    """A language of the config (a site's) that the configured voice does not speak: answers
    in it are spoken by ``engine`` (eSpeak NG for that language) instead, or, when ``engine`` is
    None, by the configured voice anyway; ``reason`` says which and why."""

    TYPE = EventType.VOICE_LANGUAGE
    language: str
    voice: str
    voice_language: str | None
    engine: str | None
    engine_voice: str | None
    reason: str


@dataclass(frozen=True)
class Reload(Payload):
    """SIGHUP: what was applied live, what needs a restart, or why the new config failed."""

    TYPE = EventType.RELOAD
    ok: bool
    applied: list[str] = field(default_factory=list)
    needs_restart: list[str] = field(default_factory=list)
    error: str | None = omitted()


@dataclass(frozen=True)
class Shutdown(Payload):
    TYPE = EventType.SHUTDOWN
    dropped_utterances: int


# -- a run -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunStart(Payload):
    """A run began. ``reason``: wake, barge-in, speech, command, follow-up, say, or
    wyoming-<request> (transcribe, detect, synthesize, recognize, transcript, intent), or what
    ``Assistant.play`` was given (the esphome service: announce, answer, media, timer)."""

    TYPE = EventType.RUN_START
    reason: str
    via: str | None = omitted()


@dataclass(frozen=True)
class Wake(Payload):
    """A wake word was heard (and, with several sites, this site won the arbiter's round)."""

    TYPE = EventType.WAKE
    name: str
    score: float
    stream_time: float | None = omitted()
    barge_in: bool | None = omitted()
    via: str | None = omitted()
    extra: dict[str, Any] = field(default_factory=dict, metadata=EXTRA)


@dataclass(frozen=True)
class WakeIgnored(Payload):
    """Another site heard the same wake word first (or louder): this one stays idle."""

    TYPE = EventType.WAKE_IGNORED
    name: str
    score: float
    winner: str
    winner_score: float
    policy: str
    window: float
    delay_s: float
    reason: str


@dataclass(frozen=True)
class VadStart(Payload):
    TYPE = EventType.VAD_START
    stream_time: float


@dataclass(frozen=True)
class VadEnd(Payload):
    """Speech ended (``reason``: silence, max-length, end-of-stream); queued for ASR."""

    TYPE = EventType.VAD_END
    stream_time: float
    seconds: float
    reason: str


@dataclass(frozen=True)
class Transcript(Payload):
    """ASR's text. ``latency_s``: from the end of speech (queue wait included);
    ``asr_seconds``: the engine's own time; ``extra``: the engine's facts (device, timings)."""

    TYPE = EventType.TRANSCRIPT
    text: str
    engine: str
    language: str
    audio_seconds: float
    latency_s: float
    asr_seconds: float
    rtf: float | None
    no_speech: bool
    speaker: str | None = omitted()  # who spoke (an enrolled name or "unknown"), when told
    speaker_score: float | None = omitted()  # similarity with the closest enrolled voice
    via: str | None = omitted()
    extra: dict[str, Any] = field(default_factory=dict, metadata=EXTRA)


@dataclass(frozen=True)
class Intent(Payload):
    """A recognized intent (``voiced.intents.Intent`` fields) and the latency from speech end."""

    TYPE = EventType.INTENT
    name: str
    slots: dict[str, Any]
    text: str
    confidence: float
    recognizer: str
    data: dict[str, Any]
    latency_s: float | None = omitted()
    speaker: str | None = omitted()
    speaker_score: float | None = omitted()
    via: str | None = omitted()


@dataclass(frozen=True)
class IntentRefused(Payload):
    """A recognized command the speaker may not give (``[[speakers.permissions]]``): not
    handled; ``speech`` is the answer spoken instead; ``rule`` the rule that refused it."""

    TYPE = EventType.INTENT_REFUSED
    name: str
    text: str
    speaker: str
    speaker_score: float | None
    rule: str
    allow: list[str]
    speech: str
    via: str | None = omitted()


@dataclass(frozen=True)
class SpeakerEnrolled(Payload):
    """A voice was enrolled (or replaced) while the daemon runs; only embeddings are kept."""

    TYPE = EventType.SPEAKER_ENROLLED
    name: str
    clips: int


@dataclass(frozen=True)
class SpeakerForgotten(Payload):
    """A voice was removed while the daemon runs."""

    TYPE = EventType.SPEAKER_FORGOTTEN
    name: str


@dataclass(frozen=True)
class IntentNotRecognized(Payload):
    """No recognizer matched; ``reasons`` are the recognizers' own (``intent_errors``)."""

    TYPE = EventType.INTENT_NOT_RECOGNIZED
    text: str
    reasons: list[Any]
    via: str | None = omitted()


@dataclass(frozen=True)
class Handled(Payload):
    """The answer (``voiced.intents.Response`` fields); ``handler`` "" means none took it."""

    TYPE = EventType.HANDLED
    speech: str
    handler: str
    expects_reply: bool
    data: dict[str, Any]
    seconds: float
    via: str | None = omitted()


@dataclass(frozen=True)
class TtsStart(Payload):
    TYPE = EventType.TTS_START
    text: str
    sentences: int


@dataclass(frozen=True)
class TtsAudio(Payload):
    """The first audio of the answer is ready."""

    TYPE = EventType.TTS_AUDIO
    engine: str
    sentence: int
    time_to_first_audio_s: float
    rate: int
    via: str | None = omitted()


@dataclass(frozen=True)
class TtsEnd(Payload):
    TYPE = EventType.TTS_END
    engine: str
    sentences: int
    duration_s: float
    audio_seconds: float
    rtf: float | None


@dataclass(frozen=True)
class PlaybackEnd(Payload):
    TYPE = EventType.PLAYBACK_END
    sinks: int


@dataclass(frozen=True)
class RunEnd(Payload):
    """A run ended, once. ``reason``: done, error, cancelled, barge-in, no-speech,
    no-speech-timeout, wake-again, muted, end-of-stream, dropped (ASR overload), shutdown
    (still open when the daemon stopped), lent (the microphone went to another assistant:
    Home Assistant's pipeline), captured (an enrollment sentence, recorded and not
    answered), and for
    Wyoming requests not-detected, replaced, disconnected. ``latency_s``: speech end to the
    end of the answer (done runs that heard speech)."""

    TYPE = EventType.RUN_END
    reason: str
    latency_s: float | None = omitted()
    via: str | None = omitted()


# -- a site ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class State(Payload):
    """A site's state, derived from its runs (voiced/site_runs.py); the first one of a site
    says it exists. MQTT's retained ``state`` and ``muted`` topics mirror it."""

    TYPE = EventType.STATE
    state: str  # idle | listening | thinking | speaking
    muted: bool


@dataclass(frozen=True)
class Muted(Payload):
    TYPE = EventType.MUTED
    muted: bool
    reason: str  # command | config


@dataclass(frozen=True)
class Timer(Payload):
    """A timer of the builtin handler: started, finished or cancelled."""

    TYPE = EventType.TIMER
    action: str
    timer_id: int
    name: str | None
    area: str | None
    seconds: float
    seconds_left: float


@dataclass(frozen=True)
class Error(Payload):
    """A stage failed (``stage``: asr, intent, handle, tts, source, asr-queue, mqtt, …);
    the daemon keeps running. ``extra``: the failing part's own facts."""

    TYPE = EventType.ERROR
    stage: str
    message: str
    extra: dict[str, Any] = field(default_factory=dict, metadata=EXTRA)


PAYLOADS: dict[str, type[Payload]] = {
    cls.TYPE: cls
    for cls in (
        Ready,
        StageLoaded,
        EngineFallback,
        RunStart,
        Wake,
        WakeIgnored,
        VadStart,
        VadEnd,
        Transcript,
        Intent,
        IntentNotRecognized,
        IntentRefused,
        SpeakerEnrolled,
        SpeakerForgotten,
        Handled,
        TtsStart,
        TtsAudio,
        TtsEnd,
        PlaybackEnd,
        RunEnd,
        State,
        Muted,
        Timer,
        Error,
        Reload,
        Shutdown,
    )
}
"""Every event type's payload class."""


def error_event(
    stage: str, message: str, run_id: str | None = None, site_id: str = "default", **data: Any
) -> Event:
    """An ``error`` event naming the stage that failed and why."""
    return Error(stage, message, data).event(run_id, site_id)
