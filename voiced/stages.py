"""The contracts a stage object fulfils, one Protocol per kind.

Every stage has ``load()`` (slow work: model load and a warm-up inference, done once at
start-up, in a worker thread) and ``close()``. Audio inside the daemon is 16 kHz mono
16-bit PCM (``voiced.audio.PIPELINE_FORMAT``); sources convert at the edge, sinks resample
to their own rate once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from voiced.audio import AudioChunk, AudioFormat
from voiced.intents import Transcript

STAGE_KINDS = (
    "source",
    "wake",
    "vad",
    "asr",
    "speaker",
    "intent",
    "handler",
    "tts",
    "sink",
    "service",
)
"""intent/handler/service objects may carry @hookimpl methods; they are registered with the
plugin manager while the daemon runs, so they join the recognize/handle/event hooks."""


@runtime_checkable
class Stage(Protocol):
    def load(self) -> None:
        """Load models and warm up; runs once in a worker thread before the daemon is ready."""

    def close(self) -> None:
        """Release what load() took."""


class Source(Stage, Protocol):
    site_id: str
    finite: bool
    """True for a source that ends (a file): the daemon stops when every source ended.
    Optional; the daemon reads False when absent."""
    hears_playback: bool
    """True for a microphone beside the speaker (our answers come back through it): VAD pauses
    while speaking unless barge-in is by speech. Optional; True when absent."""
    live: bool
    """True for audio that will not wait (a microphone, a satellite, a file paced in real
    time): when ASR falls behind, ``overload_policy`` applies to it. False for audio that can
    wait (a file read as fast as it goes, a pipe): it is held back and never loses an
    utterance. Optional; True when absent."""

    def chunks(self) -> AsyncIterator[AudioChunk]:
        """Audio in the pipeline format, at the pace it arrives; ends when the source ends."""


@dataclass(frozen=True)
class WakeDetection:
    name: str
    score: float
    data: dict[str, Any] = field(default_factory=dict)


class Wake(Stage, Protocol):
    names: list[str]
    """The wake words it listens for (what Wyoming's ``describe`` offers)."""

    def process(self, chunk: AudioChunk) -> WakeDetection | None:
        """Feed pipeline-format audio; returns a detection when a wake word was heard."""

    def reset(self) -> None:
        """Forget buffered audio (after a detection or a mute)."""


WAKE_SENSITIVITIES = ("slightly", "moderately", "very")
"""How readily a wake word fires, the three steps Home Assistant's voice satellites offer:
"moderately" is the stage as configured, "slightly" asks for a surer score (fewer false wakes),
"very" settles for a lower one (fewer missed wakes)."""


class SensitiveWake(Wake, Protocol):
    """A wake stage whose sensitivity can change while it runs."""

    def set_sensitivity(self, level: str) -> float:
        """Apply one of ``WAKE_SENSITIVITIES``; returns the score threshold now in force."""


class Vad(Stage, Protocol):
    frame_samples: int

    def speech_probability(self, frame: bytes) -> float:
        """One frame of ``frame_samples`` 16 kHz 16-bit mono samples -> 0.0..1.0."""


@dataclass(frozen=True)
class StageCall:
    """Which run a chain call serves. An engine method that declares a keyword ``call``
    (``def transcribe(self, audio, language=None, *, call: StageCall | None = None)``) is
    given one; others are called as before. ``run_id`` is None outside a run (``voiced
    transcribe``); ``draft``: a speculative reading during a pause, of the run ``run_id``."""

    run_id: str | None = None
    site_id: str = "default"
    draft: bool = False


class AsrStream(Protocol):
    """One utterance streamed to an engine while it is spoken (``Asr.open_stream``)."""

    def feed(self, audio: bytes) -> None:
        """More of the utterance (pipeline format), as the segmenter passes it; on the event
        loop: must not block (hand it to a thread of the stream's own)."""

    def finish(self, audio: bytes, language: str | None = None) -> Transcript:
        """The utterance ended (``audio`` is all of it, for the record): its transcript. Runs
        in a worker thread; raises when the stream failed, and the chain's next engine then
        transcribes the whole utterance."""

    def abort(self) -> None:
        """The utterance will not be transcribed (mute, barge-in, early commit, dropped)."""


class Asr(Stage, Protocol):
    """Optional: ``open_stream(call: StageCall, language) -> AsrStream | None``, an engine
    that starts on the utterance while it is spoken (None: not now, send it whole)."""

    name: str
    device: str

    def transcribe(self, audio: bytes, language: str | None = None) -> Transcript:
        """16 kHz mono 16-bit PCM of one utterance -> its text (runs in a worker thread).

        Optional: a keyword ``call: StageCall`` (the run it serves: a pool keys its jobs by
        it); ``draft(audio, language)``, a quicker first reading (no rescoring, no retry)
        that the early-commit speculation during a pause uses when the engine offers it."""


class NoVoice(ValueError):
    """The audio holds too little speech to tell whose voice it is."""


@dataclass(frozen=True)
class VoicePrint:
    """One utterance's voice as a speaker encoder sees it."""

    vector: Any
    """The utterance's embedding: a unit-length 1-D float32 numpy array."""
    parts: Any
    """(n, dim) embeddings of stretches of it (a second or two each), for consistency checks."""
    speech_seconds: float
    """Seconds of speech the embedding came from (silences trimmed)."""
    model: str
    """Which encoder made it: embeddings of different models do not compare."""


class SpeakerEncoder(Stage, Protocol):
    """Who is speaking: an embedding per utterance, compared with the enrolled voices."""

    name: str
    device: str

    def embed(self, audio: bytes) -> VoicePrint:
        """16 kHz mono 16-bit PCM of one utterance -> its voice print (worker thread).
        Raises ``NoVoice`` when there is too little speech in it."""


class Tts(Stage, Protocol):
    name: str
    device: str
    format: AudioFormat
    """The audio format ``synthesize`` returns (Wyoming's ``audio-start`` before any audio)."""

    def synthesize(self, text: str) -> AudioChunk:
        """One sentence -> its audio at the engine's native format (runs in a worker thread)."""


class Sink(Stage, Protocol):
    async def play(self, audio: AsyncIterator[AudioChunk], run_id: str, site_id: str) -> None:
        """Play or store a stream of audio; cancelling the task interrupts it (barge-in)."""


class Service(Stage, Protocol):
    """A long-lived part (MQTT, Wyoming); intent and handler components may also have these.

    If the object carries ``@hookimpl`` methods it is registered with the plugin manager
    while it runs, so it takes part in the recognize/handle/event hooks.
    """

    async def start(self) -> None:
        """Called on the daemon's loop after every stage loaded (optional for intent/handler)."""

    async def stop(self) -> None:
        """Called on shutdown, before close(); flush and say goodbye here."""


StageFactory = Callable[[Any, "Any"], Stage]
"""``factory(options, app) -> stage``: options is an instance of the registered model."""


@dataclass(frozen=True)
class StageSpec:
    """One stage a plugin offers."""

    kind: str
    name: str
    factory: StageFactory
    options: type[BaseModel] | None = None
    plugin: str = ""
    description: str = ""
    shorthand: str | None = None
    """The option that ``--source name:VALUE`` style command-line shorthands set."""
