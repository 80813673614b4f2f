"""One run: a pass from wake word, speech or request to the end of its answer, and its owner.

A ``Run`` knows its phase (listening -> thinking -> speaking -> ended), ends in one place
(``end``), can be cancelled, and makes the timed stage calls (transcribe, recognize, handle,
synthesize, speak) with the configured stage timeout on the daemon's shared executor, emitting
the events of each step. The local microphone, a satellite and a Wyoming request all use it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from voiced import events as ev
from voiced.audio import PCM_BYTES_PER_SECOND, AudioChunk
from voiced.context import RunContext
from voiced.events import error_event
from voiced.intents import Intent, Response, Transcript
from voiced.languages import primary
from voiced.permissions import check as check_permission
from voiced.responder import speak
from voiced.responder import synthesize as synthesize_sentence
from voiced.speakers import UNKNOWN, SpeakerMatch

if TYPE_CHECKING:
    from voiced.chain import EngineChain
    from voiced.config import Settings
    from voiced.speech_stream import SpeechStream

log = logging.getLogger(__name__)

CANNOT_DO = "Sorry, I can't do that yet."  # the answer when no handler takes a recognized intent


class Phase(StrEnum):
    LISTENING = "listening"  # hearing the command
    THINKING = "thinking"  # queued for ASR, transcribing, recognizing, handling
    SPEAKING = "speaking"  # synthesizing and playing the answer
    ENDED = "ended"


class StageTimeout(TimeoutError):
    pass


class StageFailed(RuntimeError):
    """A stage call of a run failed; its ``error`` event is already out."""

    def __init__(self, stage: str, message: str) -> None:
        super().__init__(f"{stage} failed: {message}")
        self.stage = stage
        self.message = message


@dataclass(frozen=True)
class Speculation:
    """What a transcript of the utterance so far meant, made silently during a pause.

    Nothing of it is emitted until the run commits to it (``Run.commit``); a discarded one
    leaves no trace a consumer could see."""

    transcript: Transcript
    intent: Intent | None
    audio_seconds: float
    asr_seconds: float
    engine: str
    data: dict[str, Any]  # the recognizers' context.data from this pass
    # False: the utterance went on to its normal endpoint in this same pause, and this pass
    # is its transcript (answered without a second ASR pass, but not early).
    early: bool = True


@dataclass
class Utterance:
    """Speech waiting for ASR. ``reply`` set: a request that wants the transcript back
    (a Wyoming ``transcribe``) instead of an answer spoken at the site."""

    run: Run
    audio: bytes
    reason: str
    language: str | None = None
    reply: asyncio.Future[Transcript] | None = None
    stream: SpeechStream | None = None  # streamed to an ASR engine while it was spoken


class RunServices(Protocol):
    """What a run needs of the daemon: its settings, stages, hooks, executor and events."""

    settings: Settings
    asr: EngineChain | None
    tts: EngineChain | None

    def emit(self, event: ev.Event) -> None: ...

    def recognize_hook(self, transcript: Transcript, context: RunContext) -> Intent | None: ...

    def speculative_recognize(
        self, transcript: Transcript, context: RunContext
    ) -> Intent | None: ...

    def handle_hook(self, intent: Intent, context: RunContext) -> Response | None: ...

    async def in_thread(
        self, fn: Callable[..., Any], *args: Any, timeout: float | None = None, stage: str = ""
    ) -> Any: ...


class Run:
    """One run's phase, its end, its cancellation and its timed stage calls."""

    def __init__(
        self,
        services: RunServices,
        site_id: str,
        *,
        phase: Phase = Phase.LISTENING,
        via: str | None = None,
        on_change: Callable[[Run], None] | None = None,
        background: bool = False,
    ) -> None:
        self.services = services
        language = services.settings.language_of(site_id)  # the site's own, else the house's
        self.context = RunContext(site_id=site_id, language=language, app=services)
        self.phase = phase
        self.via = via  # "wyoming" for a Wyoming request; None for a site's own runs
        self.background = background  # media under the site's other runs (voiced/mixer.py)
        self.on_change = on_change  # the site's state follows its runs
        self.cancelled: str | None = None  # why, once cancel() was called
        self.end_reason: str | None = None
        self.task: asyncio.Task[Any] | None = None  # the task answering, once past ASR
        self.ended_at: float | None = None  # monotonic time speech ended (latency base)
        self.transcript: Transcript | None = None
        self.intent: Intent | None = None
        self.audio_started = False  # stream_speech made its first audio
        self.speaker_task: asyncio.Task[SpeakerMatch] | None = None  # who spoke, beside ASR
        self.speaker_match: SpeakerMatch | None = None

    @property
    def run_id(self) -> str:
        return self.context.run_id

    @property
    def site_id(self) -> str:
        return self.context.site_id

    @property
    def ended(self) -> bool:
        return self.phase == Phase.ENDED

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, reason: str) -> Run:
        self.emit(ev.RunStart(reason))
        self._changed()
        return self

    def follow(self, on_change: Callable[[Run], None]) -> Run:
        """Call ``on_change`` at each phase change (the site whose state follows its runs)."""
        self.on_change = on_change
        return self

    def speech_ended(self) -> None:
        """The utterance ended now: latencies are measured from here."""
        self.ended_at = time.monotonic()

    def latency(self) -> float | None:
        """Seconds since the utterance ended (None for a run that heard no speech)."""
        return None if self.ended_at is None else round(time.monotonic() - self.ended_at, 4)

    def answer_in(self, task: asyncio.Task[Any]) -> asyncio.Task[Any]:
        """The task that answers this run; ``cancel()`` cancels it."""
        self.task = task
        return task

    def set_phase(self, phase: Phase) -> None:
        if self.ended or phase == self.phase:
            return
        self.phase = phase
        self._changed()

    def end(self, reason: str, latency_s: float | None = None) -> bool:
        """The one place a run ends: emits ``run-end`` once; later calls are ignored."""
        if self.ended:
            return False
        self.phase = Phase.ENDED
        self.end_reason = reason
        self.emit(ev.RunEnd(reason, latency_s))
        self._changed()
        return True

    def cancel(self, reason: str = "cancelled") -> bool:
        """Stop this run (playback included). Returns False when there was nothing to stop.

        A run being listened to ends now; one queued for or inside ASR ends when ASR hands it
        back; one answering is cancelled and ends ``cancelled``.
        """
        if self.ended:
            return False
        self.cancelled = self.cancelled or reason
        if self.phase == Phase.LISTENING:
            self.end(reason)
        elif self.task is not None and not self.task.done():
            self.task.cancel(reason)
            log.info("[%s] run %s cancelled: %s", self.site_id, self.run_id[:8], reason)
        return True

    def end_if_cancelled(self) -> bool:
        """A run cancelled while it waited (for ASR) ends here with the reason it was given."""
        if self.cancelled is not None:
            self.end(self.cancelled)
        return self.ended

    # -- events ------------------------------------------------------------------------------

    def emit(self, payload: ev.Payload) -> None:
        """Emit an event of this run (``via`` filled in where the payload has one)."""
        if self.via is not None and "via" in {f.name for f in fields(payload)}:
            payload = replace(payload, via=self.via)
        self.services.emit(payload.event(self.run_id, self.site_id))

    def failed(self, stage: str, exc: BaseException) -> StageFailed:
        """Emit the ``error`` event of a stage that failed; returns the error to raise."""
        message = str(exc) if isinstance(exc, StageTimeout) else f"{type(exc).__name__}: {exc}"
        log.error("[%s] run %s: %s failed: %s", self.site_id, self.run_id[:8], stage, message)
        self.services.emit(error_event(stage, message, self.run_id, self.site_id))
        return StageFailed(stage, message)

    # -- timed stage calls -------------------------------------------------------------------

    async def _call(self, stage: str, fn: Callable[..., Any], *args: Any) -> Any:
        timeout = self.services.settings.pipeline.stage_timeout
        try:
            return await self.services.in_thread(fn, *args, timeout=timeout, stage=stage)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self.failed(stage, exc) from exc

    def identify(self, audio: bytes) -> None:
        """Start telling who spoke ``audio``, beside ASR, when the daemon tells speakers."""
        speakers = getattr(self.services, "speakers", None)
        if speakers is None or self.speaker_task is not None:
            return
        self.speaker_task = asyncio.ensure_future(self._identify(speakers, audio))

    async def _identify(self, speakers: Any, audio: bytes) -> SpeakerMatch:
        timeout = self.services.settings.pipeline.stage_timeout
        try:
            return await self.services.in_thread(
                speakers.identify, audio, timeout=timeout, stage="speaker"
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failed speaker stage: the run goes on, speaker unknown
            self.failed("speaker", exc)
            return SpeakerMatch(UNKNOWN, None)

    async def speaker(self) -> SpeakerMatch | None:
        """Who spoke this run's utterance (None: nobody was told); sets ``context.speaker``."""
        if self.speaker_match is None and self.speaker_task is not None:
            self.speaker_match = await self.speaker_task
            self.context.speaker = self.speaker_match.name
            self.context.data["speaker"] = self.speaker_match.to_dict()
        return self.speaker_match

    def _speaker_fields(self) -> dict[str, Any]:
        match = self.speaker_match
        return {} if match is None else {"speaker": match.name, "speaker_score": match.score}

    async def transcribe(
        self, audio: bytes, language: str | None = None, stream: SpeechStream | None = None
    ) -> Transcript:
        """Speech to text on the ASR chain (finishing ``stream`` when the utterance was
        streamed while spoken); emits ``transcript``. Raises StageFailed."""
        asr = self.services.asr
        if asr is None:
            raise self.failed("asr", RuntimeError("no asr stage is loaded"))
        self.set_phase(Phase.THINKING)
        audio_seconds = len(audio) / PCM_BYTES_PER_SECOND
        started = time.monotonic()
        language = language or self.context.language  # pinned: never detected for a command
        where = {"run_id": self.run_id, "site_id": self.site_id}
        engine, transcript = await self._call(
            "asr",
            lambda: (
                asr.call("transcribe", audio, language, **where)
                if stream is None
                else asr.finish_stream(stream.engine, stream.stream, audio, language, **where)
            ),
        )
        now = time.monotonic()
        asr_seconds = now - started
        self.transcript = transcript
        await self.speaker()
        self.emit(
            ev.Transcript(
                text=transcript.text,
                engine=engine,
                language=transcript.language,
                audio_seconds=round(audio_seconds, 3),
                latency_s=round(now - (self.ended_at or started), 4),
                asr_seconds=round(asr_seconds, 4),
                rtf=round(asr_seconds / audio_seconds, 4) if audio_seconds else None,
                no_speech=transcript.no_speech,
                **self._speaker_fields(),
                extra=dict(transcript.data),
            )
        )
        return transcript

    async def speculate(self, audio: bytes) -> Speculation:
        """Transcribe and recognize ``audio`` without a single event or change to the run:
        the speculative pass during a pause. Raises what the stages raise."""
        asr = self.services.asr
        if asr is None:
            raise RuntimeError("no asr stage is loaded")
        timeout = self.services.settings.pipeline.stage_timeout
        started = time.monotonic()
        language = self.context.language

        def transcribe() -> tuple[str, Transcript]:
            name, engine = asr.active
            draft = getattr(engine, "draft", None)  # an engine's quick reading, if it has one
            if draft is not None:
                return name, draft(audio, language)
            # Keyed by the run (a pool job of this utterance is this run's, asked once), but
            # an engine fallback here is the daemon's fact, not this run's: no run in events.
            run_id = self.context.run_id
            return asr.call(
                "transcribe", audio, language, run_id=run_id, site_id=self.site_id, draft=True
            )

        engine, transcript = await self.services.in_thread(transcribe, timeout=timeout, stage="asr")
        asr_seconds = time.monotonic() - started
        intent = None
        context = replace(self.context, data=dict(self.context.data))
        if transcript.text.strip() and not transcript.no_speech:
            hook = self.services.speculative_recognize
            intent = await self.services.in_thread(
                hook, transcript, context, timeout=timeout, stage="intent"
            )
        seconds = len(audio) / PCM_BYTES_PER_SECOND
        return Speculation(transcript, intent, seconds, asr_seconds, engine, context.data)

    def commit(self, speculation: Speculation) -> None:
        """Adopt a speculative pass as this run's: emits its ``transcript`` and ``intent``
        (marked ``early_commit``), as a normal pass would have (await ``speaker()`` first for
        the speaker to be on them)."""
        transcript, intent = speculation.transcript, speculation.intent
        self.transcript, self.intent = transcript, intent
        self.context.data.update(speculation.data)
        seconds = speculation.audio_seconds
        self.emit(
            ev.Transcript(
                text=transcript.text,
                engine=speculation.engine,
                language=transcript.language,
                audio_seconds=round(seconds, 3),
                latency_s=0.0,  # made before the utterance ended
                asr_seconds=round(speculation.asr_seconds, 4),
                rtf=round(speculation.asr_seconds / seconds, 4) if seconds else None,
                no_speech=transcript.no_speech,
                **self._speaker_fields(),
                extra={
                    **transcript.data,
                    "early_commit": speculation.early,
                    "speculative": True,  # made during the pause, not after the endpoint
                },
            )
        )
        if intent is not None:
            self.emit(
                ev.Intent(**intent.to_dict(), latency_s=self.latency(), **self._speaker_fields())
            )

    async def recognize(self, transcript: Transcript) -> Intent | None:
        """Text to intent through the ``voiced_recognize`` chain; emits ``intent`` or
        ``intent-not-recognized``. Raises StageFailed."""
        self.set_phase(Phase.THINKING)
        self.transcript = transcript
        intent = await self._call("intent", self.services.recognize_hook, transcript, self.context)
        self.intent = intent
        if intent is None:
            reasons = self.context.data.get("intent_errors", [])
            self.emit(ev.IntentNotRecognized(transcript.text, reasons))
        else:
            self.emit(
                ev.Intent(**intent.to_dict(), latency_s=self.latency(), **self._speaker_fields())
            )
        return intent

    async def handle(self, intent: Intent) -> Response:
        """Act on an intent through the ``voiced_handle`` chain; emits ``handled``.

        No handler taking it gives the ``CANNOT_DO`` answer with an empty ``handler``.
        Raises StageFailed.
        """
        self.set_phase(Phase.THINKING)
        self.intent = intent
        refused = await self.refused(intent)
        if refused is not None:
            return refused
        started = time.monotonic()
        response = await self._call("handle", self.services.handle_hook, intent, self.context)
        if response is None:
            response = Response(speech=CANNOT_DO, handler="")
        self.emit(ev.Handled(**response.to_dict(), seconds=round(time.monotonic() - started, 4)))
        return response

    async def refused(self, intent: Intent) -> Response | None:
        """The answer to a command this speaker may not give (``[[speakers.permissions]]``),
        with its ``intent-refused`` event; None when it may."""
        config = self.services.settings.speakers
        if not config.permissions:
            return None
        match = await self.speaker()
        refusal = check_permission(config.permissions, intent, self.context.speaker)
        if refusal is None:
            return None
        speech = config.refusal_text(refusal.speaker)
        log.info(
            "[%s] run %s: %s refused for %s (%s)",
            self.site_id,
            self.run_id[:8],
            intent.name,
            refusal.speaker,
            refusal.rule.describe(),
        )
        self.emit(
            ev.IntentRefused(
                name=intent.name,
                text=intent.text,
                speaker=refusal.speaker,
                speaker_score=match.score if match is not None else None,
                rule=refusal.rule.describe(),
                allow=list(refusal.rule.allow),
                speech=speech,
            )
        )
        return Response(speech=speech, handler="permissions", data={"refused": True})

    async def answer(self, transcript: Transcript) -> Response:
        """What to say to a transcript: recognize, then handle (or the not-understood text)."""
        intent = await self.recognize(transcript)
        if intent is None:
            return Response(speech=self._not_understood(), handler="not-understood")
        return await self.handle(intent)

    async def synthesize(self, sentence: str) -> tuple[str, AudioChunk]:
        """One sentence to audio on the TTS chain, or from the daemon's speech cache (a fixed
        or expected answer asked for over Wyoming plays at once): (engine, audio). Raises
        StageFailed."""
        tts = self._tts()
        if tts is None:
            raise self.failed("tts", RuntimeError("no tts stage is loaded"))
        cache = getattr(self.services, "speech_cache", None)
        try:
            return await synthesize_sentence(
                tts, sentence, self.run_id, self.site_id, self._tts_call, cache
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise self.failed("tts", exc) from exc

    async def stream_speech(self, sentences: list[str]) -> AsyncIterator[AudioChunk]:
        """Audio of each sentence as soon as it's made (for a peer that plays it itself);
        the run's first audio emits ``tts-audio`` with the time it took."""
        self.set_phase(Phase.SPEAKING)
        for sentence in sentences:
            started = time.monotonic()
            engine, chunk = await self.synthesize(sentence)
            if not self.audio_started:
                self.audio_started = True
                self.emit(
                    ev.TtsAudio(
                        engine=engine,
                        sentence=1,
                        time_to_first_audio_s=round(time.monotonic() - started, 4),
                        rate=chunk.format.rate,
                    )
                )
            yield chunk

    async def speak(self, response: Response, sinks: list[Any]) -> None:
        """Synthesize and play the answer on ``sinks``. Raises StageFailed."""
        tts = self._tts()
        if tts is None:
            raise self.failed("tts", RuntimeError("no tts stage is configured"))
        self.set_phase(Phase.SPEAKING)
        try:
            cache = getattr(self.services, "speech_cache", None)
            await speak(
                response.speech, self.context, tts, sinks, self.services.emit, self._tts_call, cache
            )
        except (asyncio.CancelledError, StageFailed):
            raise
        except Exception as exc:
            raise self.failed("tts", exc) from exc

    async def _tts_call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        timeout = self.services.settings.pipeline.stage_timeout
        return await self.services.in_thread(
            lambda: fn(*args, **kwargs), timeout=timeout, stage="tts"
        )

    def _not_understood(self) -> str:
        """``pipeline.not_understood``, or, for a run in a language that text is not written
        in, the intent stage's own sentence for it (Home Assistant's ``no_intent``)."""
        settings = self.services.settings
        configured = settings.pipeline.not_understood
        language = self.context.language
        default = type(settings.pipeline).model_fields["not_understood"].default
        if language == settings.language and (configured != default or primary(language) == "en"):
            return configured
        ask = getattr(self.services, "not_understood_in", None)
        return (ask(language) if callable(ask) else None) or configured

    def _tts(self) -> EngineChain | None:
        """The TTS chain that speaks this run's language (the configured one, else espeak)."""
        tts_for = getattr(self.services, "tts_for", None)
        return tts_for(self.context.language) if callable(tts_for) else self.services.tts

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)
