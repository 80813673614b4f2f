"""What plugins may see and ask of the running daemon: ``Assistant`` and ``RunContext``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from voiced.audio import AudioChunk, AudioFormat
    from voiced.config import Settings
    from voiced.events import Event
    from voiced.intents import Transcript
    from voiced.run import Phase, Run
    from voiced.stages import Sink, Source


class Assistant(Protocol):
    """The daemon as plugins see it (``app`` in stage factories and run contexts).

    This is the only way into the daemon for a plugin: a satellite, a Wyoming request and the
    local microphone all run through these calls, with the same runs, timeouts, executor and
    events.
    """

    settings: Settings

    @property
    def accepting(self) -> bool:
        """False once the daemon is shutting down: take no new audio."""

    def emit(self, event: Event) -> None:
        """Broadcast an event; safe to call from any thread."""

    # -- commands --------------------------------------------------------------------------

    async def say(self, text: str, site_id: str | None = None) -> None:
        """Speak text at a site (a run of its own, events and all), after the says queued
        there. Raises ``CommandRefused`` (unknown site, full queue) or ``TextTooLong``."""

    async def play(
        self,
        audio: list[AudioChunk],
        site_id: str,
        reason: str = "play",
        *,
        background: bool = False,
        volume: Callable[[], float] | None = None,
    ) -> bool:
        """Play audio made elsewhere (an announcement) at a site's sinks, as a run of its own;
        True once played, False when cancelled (barge-in) or failed, or when the site has
        no audio now (a satellite not connected; the daemon's own site plays on its sinks).
        ``background`` audio (media) is lowered while the site listens, thinks or speaks,
        its other audio mixed over it; a wake word does not stop it, a cancel does; its
        ``volume`` (0..1, a player's, which may change while it plays) is asked as it plays."""

    def pause_media(self, site_id: str, paused: bool) -> bool:
        """Pause or resume the media playing at a site; False when none plays there."""

    def lend_audio(self, site_id: str, listener: Callable[[AudioChunk], None] | None) -> bool:
        """Hand a site's microphone audio to ``listener`` instead of its own wake and VAD
        (None gives it back); False when the site has no audio of its own."""

    def set_wake_words(self, site_id: str, words: set[str] | None) -> bool:
        """Act only on these wake words at a site (None: every one), now and whenever its audio
        comes (back); False when it has no audio now."""

    def set_wake_sensitivity(self, site_id: str, level: str) -> dict[str, float]:
        """How readily a site's wake words fire (one of ``WAKE_SENSITIVITIES``), now and
        whenever its audio comes (back); the threshold each wake stage took (none when the
        site has no audio now). ``ValueError`` for another level."""

    def knows_site(self, site_id: str) -> bool:
        """Whether a site exists: the daemon's own, one with audio (a source, a satellite), or
        one that had runs (a Wyoming client's requests). Commands to others are refused."""

    async def enroll_speaker(self, name: str, site_id: str | None = None) -> bool:
        """Learn a person's voice at a site: asks for three sentences through its speaker and
        records them from its microphone; True when enrolled. ``CommandRefused`` without a
        speaker stage or microphone there."""

    def forget_speaker(self, name: str) -> bool:
        """Remove an enrolled voice; False when there was none of that name."""

    async def listen(self, site_id: str | None = None) -> None:
        """Start listening at a site without a wake word."""

    def set_muted(self, muted: bool, site_id: str | None = None) -> None:
        """Stop or resume listening at a site (every site when ``site_id`` is None)."""

    def cancel(self, site_id: str | None = None) -> None:
        """Cancel the run in flight at a site (stops playback)."""

    # -- runs and their stage calls --------------------------------------------------------

    def start_run(
        self, site_id: str, reason: str, *, phase: Phase = ..., via: str | None = None
    ) -> Run:
        """A new run at a site; emits ``run-start``. Its methods ``recognize``, ``handle``,
        ``answer``, ``stream_speech`` make the timed stage calls; ``end`` ends it."""

    async def transcribe(self, run: Run, audio: bytes, language: str | None = None) -> Transcript:
        """Speech (16 kHz mono PCM) to text through the ASR queue and its workers."""

    def voice_format(self) -> AudioFormat:
        """The audio format the active TTS engine produces."""

    def engines(self, kind: str) -> list[tuple[str, Any]]:
        """The loaded engines of a chain (``asr``, ``tts``) in fallback order: (name, engine)."""

    # -- sites -----------------------------------------------------------------------------

    async def attach_site(self, source: Source, sinks: list[Sink] | None = None) -> None:
        """Make ``source`` a site (its own wake/VAD, answers to ``sinks``) and feed it; returns
        once the site exists. The site is fed until the source's ``chunks()`` ends."""

    async def detach_site(self, site_id: str, timeout: float = 10.0) -> None:
        """Wait (up to ``timeout``) for a site's feed to end after its source was closed."""

    # -- stages and threads ----------------------------------------------------------------

    def stage(self, kind: str, name: str | None = None) -> Any:
        """The loaded stage object of a kind (the first, or the one with that name)."""

    def make_stage(self, kind: str, name: str) -> Any:
        """A new, not yet loaded stage from its configured options (e.g. a wake detector of a
        connection's own)."""

    def in_thread(
        self, fn: Callable[..., Any], *args: Any, timeout: float | None = None, stage: str = ""
    ) -> Awaitable[Any]:
        """Run blocking work on the daemon's shared executor (``StageTimeout`` past timeout)."""

    def call_threadsafe(self, coro: Any) -> None:
        """Schedule a coroutine on the daemon's loop from any thread."""


def new_run_id() -> str:
    return uuid.uuid4().hex


@dataclass
class RunContext:
    """One pass through the pipeline, as stages see it: ``data`` is for plugins' own use."""

    site_id: str = "default"
    run_id: str = field(default_factory=new_run_id)
    language: str = "en"
    app: Assistant | None = None
    started: float = field(default_factory=time.monotonic)
    data: dict[str, Any] = field(default_factory=dict)
    speaker: str | None = None
    """Who spoke: an enrolled name, ``unknown``, or None when nobody was told (no speaker
    stage, or no audio: a text request). ``data["speaker"]`` has the score too."""
