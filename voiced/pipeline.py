"""The flow: sources -> wake -> VAD -> bounded ASR queue -> intent -> handle -> TTS -> sinks.

``Pipeline`` is also the ``app`` that plugins see (voiced/context.py ``Assistant``).
One asyncio loop owns the flow; model work runs in worker threads so the loop never blocks.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from voiced import events as ev
from voiced.arbiter import WakeArbiter
from voiced.asr_queue import UtteranceQueue
from voiced.audio import PCM_BYTES_PER_SECOND, AudioChunk, AudioFormat
from voiced.building import make_stage
from voiced.chain import ChainError, EngineChain
from voiced.config import Settings
from voiced.context import RunContext
from voiced.enroll_at_site import enroll_at_site
from voiced.events import Event, error_event
from voiced.intents import Intent, Response, Transcript
from voiced.limits import Admission, CommandRefused, TextTooLong, check_say_text
from voiced.mixer import Mixer
from voiced.plugins import PluginError, PluginHost, check_hooks
from voiced.run import (
    CANNOT_DO,
    Phase,
    Run,
    Speculation,
    StageFailed,
    StageTimeout,
    Utterance,
)
from voiced.segmenter import UtteranceSegmenter
from voiced.site import Site
from voiced.site_runs import SiteRuns
from voiced.speaker_id import SpeakerId
from voiced.speech_cache import Anticipated, SpeechCache, anticipate, prewarm
from voiced.speech_stream import SpeechStream
from voiced.stages import WAKE_SENSITIVITIES, Sink, Source
from voiced.voices import LanguageVoices

log = logging.getLogger(__name__)

REQUIRED_KINDS = ("source", "service")
"""Stages the daemon is for: one that can't load or start fails the start (exit 1, the reason
on stderr) instead of a healthy-looking daemon doing nothing. Others are optional: an intent,
handler or sink that fails is an error event and the daemon runs on without it."""
PREWARM_DELAY = 0.5  # s after ready before the fixed answers are synthesized (start-up first)
ANTICIPATE_EVERY = 15.0  # s between passes over the answers expected soon (the minute turns)
MUTED_REMEMBERED = 256  # freed satellite sites whose muted flag is kept for their return


class StartupError(RuntimeError):
    """The daemon cannot run: no engine of a required chain (asr, tts) could load."""


class Pipeline:
    """Builds the configured stages, runs the sites, and serves plugins as their ``app``."""

    def __init__(self, settings: Settings, host: PluginHost) -> None:
        self.settings = settings
        self.host = host
        self.pm = host.pm
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        workers = settings.pipeline.asr_workers + 8
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="voiced")
        self.sites: dict[str, Site] = {}
        self.queue: UtteranceQueue[Utterance] | None = None
        self.sources: list[Source] = []
        self.sinks: list[Sink] = []
        self._mixers: dict[int, Mixer] = {}  # by id(sink): each sink's mixer
        self.components: dict[tuple[str, str], Any] = {}
        # Why no service runs by design (a one-shot CLI command), else None: handlers that
        # publish through a service then say so at INFO instead of reporting an error.
        self.services_offline: str | None = None
        self.asr: EngineChain | None = None
        self.tts: EngineChain | None = None
        self.speakers: SpeakerId | None = None  # who is speaking (pipeline.speaker)
        self._speaker_stages: list[tuple[str, Any]] = []
        self.voices: LanguageVoices | None = None  # the TTS chain per language (sites)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._workers: list[asyncio.Task[Any]] = []
        self._site_tasks: list[asyncio.Task[Any]] = []
        self._feeds: dict[str, asyncio.Task[Any]] = {}  # attached sites' feeds, by site id
        self._siteless: dict[str, SiteRuns] = {}  # sites with runs but no audio of their own
        self._registered: list[Any] = []
        self.accepting = True
        self.dropped_utterances = 0
        self._waiting_sites: set[str] = set()  # sites whose audio can wait (files, pipes)
        self._fast_feeds = 0  # such sites being read now
        self._asr_busy = 0  # committed utterances an ASR worker is transcribing now
        self._speculating = 0  # speculative transcripts in flight (early commit)
        self.speculations_dropped = 0  # pauses not speculated on: ASR had committed work
        self.speech_cache = SpeechCache()  # short answers, synthesized once per voice
        self.answers_cached: asyncio.Task[int] | None = None  # the fixed answers' prewarm
        self.answers_anticipated: asyncio.Task[None] | None = None  # expected answers, a loop
        self.anticipation: Anticipated | None = None  # what its latest pass did
        self.anticipated_once = asyncio.Event()  # its first pass is done
        self._answered = asyncio.Event()  # a command was answered: what to expect may change
        self.muted_default = settings.conversation.muted  # mute-all changes this, not settings
        self.arbiter = WakeArbiter(settings.arbiter, self.emit)  # one wake word, one room
        self._muted_sites: dict[str, bool] = {}  # freed sites muted unlike the default
        self._wake_words: dict[str, set[str]] = {}  # the wake words a site acts on, if chosen
        self._wake_sensitivity: dict[str, str] = {}  # a site's level, if one was chosen
        self._says = Admission(settings.pipeline.max_commands_per_site, "say")
        self._built = False

    # -- app API for plugins -----------------------------------------------------------------

    def emit(self, event: Event) -> None:
        """Broadcast to every ``voiced_event`` observer; safe from any thread."""
        loop = self.loop
        if loop is not None and threading.get_ident() != self._loop_thread:
            if not loop.is_closed():
                loop.call_soon_threadsafe(self._dispatch, event)
            return
        self._dispatch(event)

    def _dispatch(self, event: Event) -> None:
        for impl in reversed(self.pm.hook.voiced_event.get_hookimpls()):
            try:
                impl.function(event=event)
            except Exception:  # one broken observer must not silence the others
                log.exception("event observer %s failed on %s", impl.plugin_name, event.type)

    def call_threadsafe(self, coro: Awaitable[Any]) -> None:
        """Run a coroutine on the loop; its failure is logged and an error event, never an
        unretrieved task exception."""
        assert self.loop is not None, "the pipeline is not running"
        if threading.get_ident() == self._loop_thread:
            self._spawn(self._reported(coro))
        else:
            self.loop.call_soon_threadsafe(self._spawn, self._reported(coro))

    async def _reported(self, coro: Awaitable[Any]) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except (CommandRefused, TextTooLong) as exc:
            log.warning("%s", exc)
            self.emit(error_event("command", str(exc), None, self.settings.site_id))
        except Exception as exc:
            log.exception("a task a plugin started failed")
            self.emit(
                error_event("command", f"{type(exc).__name__}: {exc}", None, self.settings.site_id)
            )

    async def say(self, text: str, site_id: str | None = None) -> None:
        """Speak at a known site, after the says already queued there (at most
        ``pipeline.max_commands_per_site``); refused with ``CommandRefused`` or ``TextTooLong``."""
        if self.tts is None:
            raise RuntimeError("no tts stage is configured")
        site_id = site_id or self.settings.site_id
        if not self.knows_site(site_id):
            raise CommandRefused(f"say: no site {site_id!r}; sites: {', '.join(self.site_ids())}")
        check_say_text(text, self.settings.pipeline.max_say_chars)
        async with self._says.admit(site_id):
            run = self.start_run(site_id, "say", phase=Phase.SPEAKING)
            task = run.answer_in(self._spawn(self._speak_run(run, Response(text, handler="say"))))
            await asyncio.shield(task)

    async def play(
        self,
        audio: list[AudioChunk],
        site_id: str,
        reason: str = "play",
        *,
        background: bool = False,
        volume: Callable[[], float] | None = None,
    ) -> bool:
        """Play audio made elsewhere (an announcement) at a site, as a run of its own; True
        once played, False when it was cancelled (barge-in, cancel) or failed.

        ``background`` audio (media) is lowered to ``conversation.duck_volume`` while the site
        listens, thinks or speaks, with its other audio mixed over it; a wake word does not
        stop it, a cancel does, and new background audio at the site replaces it. Its
        ``volume`` (0..1, a player's, which may change while it plays) is asked as it plays."""
        if site_id not in self.sites and site_id != self.settings.site_id:
            message = f"{reason}: site {site_id!r} has no speaker now (not connected)"
            log.warning("%s", message)
            self.emit(error_event("sink", message, None, site_id))
            return False
        if background:
            await self._stop_media(site_id)
        run = self.start_run(site_id, reason, phase=Phase.SPEAKING, background=background)
        task = run.answer_in(self._spawn(self._play_run(run, audio, volume)))
        try:
            return bool(await asyncio.shield(task))
        except asyncio.CancelledError:
            if task.cancelled():
                return False
            raise

    def pause_media(self, site_id: str, paused: bool) -> bool:
        """Pause or resume the media playing at a site; False when none plays there."""
        return any([mixer.pause(paused) for mixer in self._sinks_of(site_id)])

    def _media_gain(self, site_id: str, volume: Callable[[], float] | None) -> Callable[[], float]:
        """The gain of media at a site: its volume, times ``duck_volume`` while the site
        listens, thinks or speaks."""
        duck = self.settings.conversation.duck_volume

        def gain() -> float:  # the site's runs now: its audio may come after the media began
            runs = self.sites.get(site_id) or self._siteless.get(site_id)
            level = volume() if volume is not None else 1.0
            return level * duck if runs is not None and runs.busy else level

        return gain

    async def _stop_media(self, site_id: str) -> None:
        runs = [r for r in self.site_runs(site_id).runs.values() if r.background]
        for run in runs:
            run.cancel("replaced")
        await asyncio.gather(*(r.task for r in runs if r.task), return_exceptions=True)

    async def _play_run(
        self, run: Run, audio: list[AudioChunk], volume: Callable[[], float] | None = None
    ) -> bool:
        sinks = self._sinks_of(run.site_id)
        if run.background:
            gain = self._media_gain(run.site_id, volume)
            players = [
                sink.play_background(_replay(audio), run.run_id, run.site_id, gain)
                for sink in sinks
            ]
        else:
            players = [sink.play(_replay(audio), run.run_id, run.site_id) for sink in sinks]
        try:
            await asyncio.gather(*players)
        except asyncio.CancelledError:
            run.end("cancelled")
            raise
        except Exception as exc:
            log.warning("[%s] playing failed: %s", run.site_id, exc)
            self.emit(error_event("sink", str(exc), run.run_id, run.site_id))
            run.end("error")
            return False
        self.emit(ev.PlaybackEnd(len(sinks)).event(run.run_id, run.site_id))
        run.end("done")
        return True

    def lend_audio(self, site_id: str, listener: Callable[[AudioChunk], None] | None) -> bool:
        """Hand a site's microphone audio to ``listener`` instead of its own wake and VAD
        (None gives it back); False when the site has no audio of its own."""
        site = self.sites.get(site_id)
        if site is None:
            return False
        site.lend(listener)
        return True

    def set_wake_words(self, site_id: str, words: set[str] | None) -> bool:
        """Act only on these wake words at a site (None: on every one its wake stages hear),
        now and whenever its audio comes (back); False when it has no audio now."""
        if words is None:
            self._wake_words.pop(site_id, None)
        else:
            self._wake_words[site_id] = set(words)
        site = self.sites.get(site_id)
        if site is None:
            return False
        site.wake_words = words
        return True

    def set_wake_sensitivity(self, site_id: str, level: str) -> dict[str, float]:
        """How readily a site's wake words fire (one of ``WAKE_SENSITIVITIES``), now and
        whenever its audio comes (back); the threshold each wake stage took, by stage."""
        if level not in WAKE_SENSITIVITIES:
            raise ValueError(f"wake sensitivity {level!r}: one of {', '.join(WAKE_SENSITIVITIES)}")
        self._wake_sensitivity[site_id] = level
        site = self.sites.get(site_id)
        return _set_sensitivity(site.wakes, level) if site is not None else {}

    async def enroll_speaker(self, name: str, site_id: str | None = None) -> bool:
        """Learn a voice at a site: the guided sentences through its speaker and microphone."""
        return await enroll_at_site(self, name, site_id)

    def forget_speaker(self, name: str) -> bool:
        """Remove an enrolled voice; False when there was none of that name."""
        if self.speakers is None or not self.speakers.forget(name):
            return False
        self.emit(ev.SpeakerForgotten(name.strip().lower()).event(None, self.settings.site_id))
        return True

    def knows_site(self, site_id: str) -> bool:
        """The daemon's own site, a site with audio (a source, a satellite), or one that had
        runs of its own (a Wyoming client's requests)."""
        return site_id in (self.settings.site_id, *self.sites, *self._siteless)

    def site_ids(self) -> list[str]:
        return sorted({self.settings.site_id, *self.sites})

    async def listen(self, site_id: str | None = None) -> None:
        site = self._site(site_id)
        site.listen(reason="command")

    def set_muted(self, muted: bool, site_id: str | None = None) -> None:
        targets = [self._site(site_id)] if site_id else list(self.sites.values())
        for site in targets:
            site.set_muted(muted)
        if not site_id:  # every site: new sites start that way too (runtime state, not config)
            self.muted_default = muted
            self._muted_sites.clear()

    def cancel(self, site_id: str | None = None) -> None:
        """Cancel the runs in flight at a site (every site when None): its playback stops. A
        site without audio now (a Wyoming request's, an announcement's) has its runs cancelled;
        an unknown site is a KeyError."""
        siteless = self._siteless.get(site_id) if site_id and site_id not in self.sites else None
        if siteless is not None:
            for run in list(siteless.runs.values()):
                run.cancel("cancelled")
            return
        targets = [self._site(site_id)] if site_id else list(self.sites.values())
        for site in targets:
            site.cancel("cancelled")

    def stage(self, kind: str, name: str | None = None) -> Any:
        if kind in ("asr", "tts"):
            chain = self.asr if kind == "asr" else self.tts
            engines = chain.loaded if chain else []
            return next((e for n, e in engines if name in (None, n)), None)
        if kind == "source":
            return next((s for s in self.sources if name in (None, s.stage_name)), None)
        if kind == "sink":
            return next((s for s in self.sinks if name in (None, s.stage_name)), None)
        return next(
            (obj for (k, n), obj in self.components.items() if k == kind and name in (None, n)),
            None,
        )

    def start_run(
        self,
        site_id: str,
        reason: str,
        *,
        phase: Phase = Phase.LISTENING,
        via: str | None = None,
        background: bool = False,
    ) -> Run:
        """A new run at a site (followed by the site when it has one); emits ``run-start``."""
        made = Run(self, site_id, phase=phase, via=via, background=background)
        run = self.site_runs(site_id).adopt(made)
        return run.start(reason)

    def site_runs(self, site_id: str) -> SiteRuns:
        """The runs at a site: its audio ``Site``, or a plain ``SiteRuns`` (no audio here)."""
        site = self.sites.get(site_id)
        if site is not None:
            return site
        if site_id not in self._siteless:
            self._siteless[site_id] = SiteRuns(site_id, self.emit)
        return self._siteless[site_id]

    async def transcribe(self, run: Run, audio: bytes, language: str | None = None) -> Transcript:
        """Speech to text for a request, through the ASR queue and its workers."""
        if self.asr is None or self.queue is None:
            raise run.failed("asr", RuntimeError("no asr stage is loaded"))
        run.speech_ended()
        run.identify(audio)
        reply: asyncio.Future[Transcript] = asyncio.get_running_loop().create_future()
        run.set_phase(Phase.THINKING)
        await self._submit(Utterance(run, audio, "request", language, reply))
        return await reply

    def not_understood_in(self, language: str) -> str | None:
        """What an intent stage says, in ``language``, to speech that matched nothing."""
        for (kind, _), component in self.components.items():
            ask = getattr(component, "not_understood", None)
            if kind == "intent" and callable(ask) and (text := ask(language)):
                return str(text)
        return None

    def tts_for(self, language: str | None) -> EngineChain | None:
        """The TTS chain that speaks ``language`` (a site's): see voiced/voices.py."""
        return self.voices.chain(language) if self.voices is not None else self.tts

    def _voice_stage(self, name: str, voice: str) -> Any:
        """A TTS stage ``name`` speaking ``voice``, its other options from the config."""
        spec = self.host.stage_spec("tts", name)
        if spec is None:
            raise RuntimeError(f"no tts stage {name!r} (its plugin is not loaded)")
        options = {**self.settings.stage_options("tts", name), "voice": voice}
        stage = spec.factory(spec.options(**options) if spec.options else options, self)
        stage.stage_name = name
        return stage

    def voice_format(self) -> AudioFormat:
        engine = self.tts.active[1] if self.tts is not None and self.tts.loaded else None
        return getattr(engine, "format", None) or AudioFormat(22050, 2, 1)

    def engines(self, kind: str) -> list[tuple[str, Any]]:
        chain = {"asr": self.asr, "tts": self.tts}.get(kind)
        return list(chain.loaded) if chain is not None else []

    def make_stage(self, kind: str, name: str) -> Any:
        return make_stage(self.host, self.settings, kind, name, app=self)

    async def attach_site(self, source: Source, sinks: list[Sink] | None = None) -> None:
        """Make ``source`` a site and feed it in a task of the daemon's own."""
        site = await self._new_site(source.site_id, sinks, getattr(source, "hears_playback", True))
        self._note_pace(source)
        task = asyncio.create_task(self._feed_then_free(site, source), name=f"site:{site.site_id}")
        self._feeds[source.site_id] = task

    async def _feed_then_free(self, site: Site, source: Source) -> None:
        """Feed an attached site; once its source ends, free its wake/VAD stages (a satellite
        that reconnects gets fresh ones; only a muted flag is remembered)."""
        try:
            await self._feed(site, source)
        finally:
            site.detached()
            if self.sites.get(site.site_id) is site and self.accepting:
                del self.sites[site.site_id]
                self._remember_muted(site.site_id, site.muted)
                for run in list(site.runs.values()):  # runs still answering keep their events
                    self.site_runs(site.site_id).adopt(run)
                stages = [site.segmenter.vad, *site.wakes]
                await self.in_thread(_close_all, stages)

    def _remember_muted(self, site_id: str, muted: bool) -> None:
        self._muted_sites.pop(site_id, None)
        if muted != self.muted_default:
            self._muted_sites[site_id] = muted
            while len(self._muted_sites) > MUTED_REMEMBERED:
                del self._muted_sites[next(iter(self._muted_sites))]

    async def detach_site(self, site_id: str, timeout: float = 10.0) -> None:
        task = self._feeds.pop(site_id, None)
        if task is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()

    def recognize_hook(self, transcript: Transcript, context: RunContext) -> Intent | None:
        return self.pm.hook.voiced_recognize(transcript=transcript, context=context)

    def speculative_recognize(self, transcript: Transcript, context: RunContext) -> Intent | None:
        """Only the template recognizers of ``vad.early_commit_recognizers``, in that order:
        a pause must not wake an LLM or a recognizer with side effects."""
        for name in self.settings.vad.early_commit_recognizers:
            recognize = getattr(self.components.get(("intent", name)), "voiced_recognize", None)
            intent = recognize(transcript=transcript, context=context) if recognize else None
            if intent is not None:
                return intent
        return None

    def handle_hook(self, intent: Intent, context: RunContext) -> Response | None:
        return self.pm.hook.voiced_handle(intent=intent, context=context)

    def _make_run(self, site_id: str) -> Run:
        return Run(self, site_id)

    # -- start-up ----------------------------------------------------------------------------

    def build(self, only: set[str] | None = None) -> None:
        """Create the configured stage objects (fast; no model is loaded yet).

        ``only`` limits it to some kinds, for one-shot commands (``voiced say`` needs tts+sink).
        """
        p = self.settings.pipeline
        make = functools.partial(make_stage, self.host, self.settings, app=self)

        def wanted(kind: str) -> bool:
            return only is None or kind in only

        self.sources = [make("source", name) for name in p.source] if wanted("source") else []
        self.sinks = [make("sink", name) for name in p.sink] if wanted("sink") else []
        chain_options = {"site_id": self.settings.site_id, "retry_after": p.engine_retry_seconds}
        if wanted("asr"):
            engines = [(n, make("asr", n)) for n in p.asr]
            self.asr = EngineChain("asr", engines, self.emit, **chain_options)
        if wanted("tts"):
            engines = [(n, make("tts", n)) for n in p.tts]
            self.tts = EngineChain("tts", engines, self.emit, **chain_options)
        self._speaker_stages = (
            _named_stages(make, "speaker", p.speaker) if wanted("speaker") else []
        )
        for kind, names in (("intent", p.intent), ("handler", p.handler), ("service", p.service)):
            for name in names if wanted(kind) else []:
                self.components[(kind, name)] = make(kind, name)
        # Per-site stages are made when a site starts; make them now to fail early on bad options.
        if wanted("source"):
            make("vad", p.vad)
            for name in p.wake:
                make("wake", name)
        self._built = True

    async def start(self) -> None:
        """Build, load and warm up every stage, start services; then the daemon is ready."""
        self.loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.queue = UtteranceQueue(self.settings.pipeline.asr_queue_size)
        if not self._built:
            self.build()
        await self._load_components()
        await self._load_io_and_engines()
        await self._load_speakers()
        if self.tts is not None:
            self.voices = LanguageVoices(
                self.tts, self._voice_stage, self.emit, self.settings.site_id, self.settings.voices
            )
            await self.in_thread(self.voices.prepare, self.settings.languages())
        await self._start_components()
        if self.asr is not None:
            self._workers = [
                asyncio.create_task(self._asr_worker(), name=f"asr-worker-{i}")
                for i in range(self.settings.pipeline.asr_workers)
            ]
        self._emit_ready()
        self._start_prewarming()

    async def _load_components(self) -> None:
        """Load the intents, handlers and services; register those that load, drop the rest."""
        # Observers first, so they see the loading events.
        # pluggy calls the last registered first (within tryfirst/plain/trylast): register in
        # reverse so the order of `pipeline.intent` and `pipeline.handler` is the call order.
        for (kind, name), component in list(reversed(self.components.items())):
            if await self._load_optional(kind, name, component):
                self._register(kind, name, component)
            else:
                del self.components[(kind, name)]

    async def _load_io_and_engines(self) -> None:
        """Load the sources and sinks (optional each) and the ASR and TTS chains (required)."""
        self.sources = [s for s in self.sources if await self._load_optional("source", "", s)]
        self.sinks = [s for s in self.sinks if await self._load_optional("sink", "", s)]
        for chain in (self.asr, self.tts):
            if chain is not None:
                try:
                    await self.in_thread(chain.load)
                except ChainError as exc:
                    raise StartupError(str(exc)) from None

    async def _start_components(self) -> None:
        """Start every loaded component that has a ``start``; one that fails is reported."""
        for (kind, name), component in list(self.components.items()):
            if hasattr(component, "start"):
                try:
                    await component.start()
                except Exception as exc:
                    self._optional_failed(kind, name, exc, "start")

    def _emit_ready(self) -> None:
        """Emit the ``Ready`` event: the loaded engines and the sources."""
        self.emit(
            ev.Ready(
                asr=[n for n, _ in self.asr.loaded] if self.asr else [],
                tts=[n for n, _ in self.tts.loaded] if self.tts else [],
                sources=[s.stage_name for s in self.sources],
            ).event(None, self.settings.site_id)
        )

    def _start_prewarming(self) -> None:
        """Start caching the fixed answers and anticipating answers, as configured."""
        if self.tts is not None and self.tts.loaded and self.settings.pipeline.cache_fixed_answers:
            self.answers_cached = asyncio.create_task(self._cache_answers(), name="prewarm")
        if self.tts is not None and self.tts.loaded and self.settings.pipeline.anticipate_answers:
            self.answers_anticipated = asyncio.create_task(
                self._anticipate_answers(), name="anticipate"
            )

    async def _load_speakers(self) -> None:
        """The first ``pipeline.speaker`` encoder that loads tells who speaks; a voices file
        that cannot be used is an error event, and every speaker is then ``unknown``."""
        for name, stage in self._speaker_stages:
            speakers = SpeakerId(name, stage, self.settings.speakers)
            try:
                await self.in_thread(speakers.load)
            except Exception as exc:
                self._optional_failed("speaker", name, exc, "load")
                continue
            if speakers.disabled is not None:
                self.emit(error_event("speaker", speakers.disabled, None, self.settings.site_id))
            self.speakers = speakers
            return

    async def _cache_answers(self) -> int:
        """The handlers' fixed answers into the speech cache, after start-up and only while
        the daemon has nothing else to do; never fails the daemon."""
        await asyncio.sleep(PREWARM_DELAY)
        await self._idle()  # rendering the templates is Python work too (the GIL)
        # the daemon's own fixed answers: not understood, and no handler for the intent
        answers = [self.settings.pipeline.not_understood, CANNOT_DO]
        answers += await self._handlers_answers("fixed_answers", "fixed answers are not cached")
        assert self.tts is not None
        started = time.monotonic()
        voice = self.tts.active
        kept = await prewarm(
            self.speech_cache, voice, answers, self.in_thread, self._idle, self._busy
        )
        log.info("cached %d fixed answers in %.1f s", kept, time.monotonic() - started)
        return kept

    async def _anticipate_answers(self) -> None:
        """Keep the answers the handlers expect to give soon synthesized (the time this
        minute and the next, a state as it is now), a pass every ``ANTICIPATE_EVERY`` s and
        after each answered command (a timer started: "2 running timers."), after the fixed
        answers, each piece only while idle and stopped when work comes."""
        if self.answers_cached is not None:
            await asyncio.gather(self.answers_cached, return_exceptions=True)
        else:
            await asyncio.sleep(PREWARM_DELAY)
        assert self.tts is not None
        while True:
            await self._idle()
            answers = await self._handlers_answers(
                "anticipated_answers", "expected answers are not made"
            )
            voice = self.tts.active
            self.anticipation = await anticipate(
                self.speech_cache, voice, answers, self.in_thread, self._idle, self._busy
            )
            log.debug("expected answers: %s", self.anticipation)
            self.anticipated_once.set()
            # the next pass when the minute may turn, or sooner after a command; not
            # wait_for: when the stop's cancel meets a command just answered, 3.11's wait_for
            # returns the event's result and the cancel is lost (the daemon never stopped)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(ANTICIPATE_EVERY):
                    await self._answered.wait()
            self._answered.clear()

    async def _handlers_answers(self, method: str, failure: str) -> list[str]:
        """What every handler with ``method`` answers by it, in a worker thread; a handler
        whose ``method`` fails is logged ("its <failure>") and left out."""
        answers: list[str] = []
        for (kind, name), component in self.components.items():
            if kind != "handler" or not hasattr(component, method):
                continue
            try:
                answers += await self.in_thread(getattr(component, method))
            except Exception as exc:
                log.warning("handler %s: its %s: %s", name, failure, exc)
        return answers

    async def _idle(self) -> None:
        """Return once no run is open, no ASR work is queued or running and no file or pipe
        is being read (it goes as fast as the daemon does)."""
        while self._busy():
            await asyncio.sleep(0.05)

    def _busy(self) -> bool:
        """A run is open, ASR work is queued or running, or a file or pipe is being read."""
        assert self.queue is not None
        return bool(
            self._tasks
            or self._fast_feeds
            or self._asr_busy
            or self._speculating
            or not self.queue.empty()
            or any(site.runs for site in self.sites.values())
            or any(runs.runs for runs in self._siteless.values())
        )

    async def _load_optional(self, kind: str, name: str, stage: Any) -> bool:
        """Load a stage the daemon can run without; a failure is an error event, not a crash.
        A required one (``REQUIRED_KINDS``) that fails stops the start with ``StartupError``."""
        try:
            await self.in_thread(stage.load)
        except Exception as exc:
            self._optional_failed(kind, name or getattr(stage, "stage_name", "?"), exc, "load")
            return False
        return True

    def _optional_failed(self, kind: str, name: str, exc: Exception, phase: str) -> None:
        if kind in REQUIRED_KINDS:  # a daemon without it would report READY and do nothing
            raise StartupError(f"{kind} {name} failed to {phase}: {exc}") from None
        message = (
            f"{kind} {name} failed to {phase}, running without it: {type(exc).__name__}: {exc}"
        )
        log.error("%s", message)
        self.emit(error_event(kind, message, None, self.settings.site_id, stage_name=name))

    def _register(self, kind: str, name: str, component: Any) -> None:
        plugin_name = f"{kind}:{name}"
        self.pm.register(component, name=plugin_name)
        if not self.pm.get_hookcallers(component):
            self.pm.unregister(component)
            return
        try:
            check_hooks(self.pm)
        except PluginError:
            self.pm.unregister(component)
            raise
        self._registered.append(component)

    # -- running -----------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Run every configured source as a site until they end (all finite) or ``stop``."""
        self._site_tasks = [
            asyncio.create_task(self.run_site(src), name=f"site:{src.site_id}")
            for src in self.sources
        ]
        finite = bool(self.sources) and all(getattr(s, "finite", False) for s in self.sources)
        waiters = [asyncio.create_task(stop.wait())] if stop else []
        if finite:
            waiters.append(asyncio.create_task(self._sources_done_then_idle()))
        if not waiters:
            waiters.append(asyncio.create_task(asyncio.Event().wait()))
        _done, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()

    async def _sources_done_then_idle(self) -> None:
        await asyncio.gather(*self._site_tasks, return_exceptions=True)
        await self.drain()

    async def drain(self) -> None:
        """Wait until queued utterances and runs in flight are finished."""
        assert self.queue is not None
        await self.queue.join()
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def run_site(self, source: Source, sinks: list[Sink] | None = None) -> None:
        """Feed one source through its own wake/VAD; returns when the source ends."""
        site = await self._new_site(source.site_id, sinks, getattr(source, "hears_playback", True))
        self._note_pace(source)
        await self._feed(site, source)

    async def _feed(self, site: Site, source: Source) -> None:
        fast = source.site_id in self._waiting_sites
        self._fast_feeds += fast  # audio read as fast as it goes: the daemon is never idle
        try:
            async with _closing(source.chunks()) as chunks:
                async for chunk in chunks:
                    if not self.accepting:
                        break
                    await site.feed(chunk)
            await site.finish()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("[%s] source failed: %s", source.site_id, exc)
            self.emit(
                error_event("source", str(exc), None, source.site_id, error=type(exc).__name__)
            )
            await site.finish()
        finally:
            self._fast_feeds -= fast

    async def _new_site(
        self, site_id: str, sinks: list[Sink] | None, hears_playback: bool = True
    ) -> Site:
        if site_id in self.sites:
            return self.sites[site_id]
        p = self.settings.pipeline
        vad = make_stage(self.host, self.settings, "vad", p.vad, app=self)
        wakes = [make_stage(self.host, self.settings, "wake", n, app=self) for n in p.wake]
        for stage in [vad, *wakes]:
            await self.in_thread(stage.load)
        site = Site(
            site_id,
            UtteranceSegmenter(vad, self.settings.vad),
            wakes,
            self.settings.conversation,
            self.emit,
            self._submit,
            self._make_run,
            sinks,
            claim_wake=self.arbiter.claim if self.arbiter.config.enabled else None,
            hears_playback=hears_playback,
            muted=self._muted_sites.pop(site_id, self.muted_default),
            speculate=self._speculate,
            commit_early=self._commit_early,
            open_stream=self._open_stream,
        )
        site.wake_words = self._wake_words.get(site_id)
        if site_id in self._wake_sensitivity:
            _set_sensitivity(wakes, self._wake_sensitivity[site_id])
        self.sites[site_id] = site
        siteless = self._siteless.pop(site_id, None)
        for run in siteless.runs.values() if siteless else []:
            site.adopt(run)  # runs that began before the site had audio
        return site

    def _note_pace(self, source: Source) -> None:
        """Remember whether a site's audio can wait (a file, a pipe) or not (a microphone)."""
        if getattr(source, "live", True):
            self._waiting_sites.discard(source.site_id)
        else:
            self._waiting_sites.add(source.site_id)

    async def _submit(self, utterance: Utterance) -> None:
        """Queue an utterance for ASR, applying the overload policy when the queue is full.

        Audio that can wait (a file, a pipe) is always held back instead: it must never lose
        speech to a policy meant for a microphone that cannot stop talking. So a live
        utterance that overflows drops the oldest queued utterance of a live site only; when
        every queued one is a file's or a pipe's, it waits its turn like them.
        """
        assert self.queue is not None
        policy = self.settings.pipeline.overload_policy
        waits = utterance.run.site_id in self._waiting_sites
        if self.queue.full() and policy == "drop-oldest" and not waits:
            dropped = self.queue.take_oldest(lambda u: u.run.site_id not in self._waiting_sites)
        else:
            dropped = None
        if dropped is not None:
            self.dropped_utterances += 1
            message = (
                f"ASR is behind: queue of {self.queue.maxsize} full, dropped the oldest "
                f"utterance ({len(dropped.audio) / PCM_BYTES_PER_SECOND:.1f} s)"
            )
            log.warning("[%s] %s", dropped.run.site_id, message)
            self.emit(
                error_event(
                    "asr-queue",
                    message,
                    dropped.run.run_id,
                    dropped.run.site_id,
                    dropped_total=self.dropped_utterances,
                )
            )
            if dropped.stream is not None:
                dropped.stream.abort()
            if dropped.reply is not None and not dropped.reply.done():
                dropped.reply.set_exception(StageFailed("asr-queue", message))
            dropped.run.end("dropped")
        await self.queue.put(utterance)  # with "block", this holds the source back

    async def _asr_worker(self) -> None:
        assert self.queue is not None and self.asr is not None
        while True:
            utterance = await self.queue.get()
            self._asr_busy += 1
            try:
                await self._transcribe(utterance)
            except Exception:
                log.exception("ASR worker failed")
            finally:
                self._asr_busy -= 1
                self.queue.task_done()

    async def _speculate(self, run: Run, audio: bytes) -> Speculation | None:
        """A speculative transcript of the utterance so far, or None.

        Committed work comes first: it runs only when the ASR queue is empty and a worker's
        worth of room is free (``pipeline.asr_workers`` bounds committed and speculative
        passes together); otherwise the pause is dropped, and the normal endpoint decides.
        Audio that can wait (a file read as fast as it goes, a pipe) has nobody waiting for
        an early answer: its pauses are not speculated on.
        """
        assert self.queue is not None
        workers = self.settings.pipeline.asr_workers
        if run.site_id in self._waiting_sites:
            return None
        if self.asr is None or not self.queue.empty():
            self.speculations_dropped += 1
            return None
        if self._asr_busy + self._speculating >= workers:
            self.speculations_dropped += 1
            return None
        self._speculating += 1
        try:
            return await run.speculate(audio)
        except Exception as exc:  # a failed guess costs nothing: the normal pass follows
            log.info("[%s] speculative transcript failed: %s", run.site_id, exc)
            return None
        finally:
            self._speculating -= 1

    def _open_stream(self, run: Run) -> SpeechStream | None:
        """A stream to the active ASR engine for the utterance starting now, if it has one."""
        opened = self.asr.open_stream(run.run_id, run.site_id) if self.asr is not None else None
        return SpeechStream(*opened) if opened is not None else None

    def _commit_early(self, run: Run, speculation: Speculation) -> None:
        """Answer a run from its speculative pass (the site ended its utterance early)."""
        run.answer_in(self._spawn(self._respond(run, speculation.transcript, speculation)))

    async def _transcribe(self, utterance: Utterance) -> None:
        """ASR for one queued utterance; a site's utterance then gets its answer."""
        run, reply = utterance.run, utterance.reply
        if reply is not None:  # a request: the caller continues with the transcript
            try:
                reply.set_result(await run.transcribe(utterance.audio, utterance.language))
            except StageFailed as exc:
                reply.set_exception(exc)
            return
        if run.end_if_cancelled():
            if utterance.stream is not None:
                utterance.stream.abort()
            return
        try:
            transcript = await run.transcribe(utterance.audio, stream=utterance.stream)
        except StageFailed:
            run.end("error")
            return
        if transcript.no_speech or not transcript.text.strip():
            run.end("no-speech")
            return
        if run.end_if_cancelled():
            return
        run.answer_in(self._spawn(self._respond(run, transcript)))

    async def _respond(
        self, run: Run, transcript: Transcript, speculation: Speculation | None = None
    ) -> None:
        """Recognize, handle and speak the answer at the run's site, then end the run.

        With ``speculation`` (an early commit), its transcript and intent are the run's: no
        second ASR or recognition pass."""
        try:
            if speculation is not None and speculation.intent is not None:
                await run.speaker()  # on the transcript and intent events commit emits
                run.commit(speculation)
                response = await run.handle(speculation.intent)
            else:
                response = await run.answer(transcript)
            await run.speak(response, self._sinks_of(run.site_id))
        except asyncio.CancelledError:
            run.end("cancelled")
            raise
        except StageFailed:
            run.end("error")
            return
        self._end_answered(run, response)

    async def _speak_run(self, run: Run, response: Response) -> None:
        """Speak a response as a run of its own (``say``), then end the run."""
        try:
            await run.speak(response, self._sinks_of(run.site_id))
        except asyncio.CancelledError:
            run.end("cancelled")
            raise
        except StageFailed:
            run.end("error")
            return
        self._end_answered(run, response)

    def _end_answered(self, run: Run, response: Response) -> None:
        run.end("done", latency_s=run.latency())
        self._answered.set()  # a timer started, a state changed: expect anew once idle
        site = self.sites.get(run.site_id)
        if site is not None and self._wants_follow_up(response):
            site.listen(reason="follow-up", seconds=self.settings.conversation.follow_up_seconds)

    def _sinks_of(self, site_id: str) -> list[Mixer]:
        """The sinks that play at a site, each through its mixer (voiced/mixer.py)."""
        site = self.sites.get(site_id)
        sinks = site.sinks if site is not None and site.sinks is not None else self.sinks
        return [self._mixer(sink) for sink in sinks]

    def _mixer(self, sink: Sink) -> Mixer:
        mixer = self._mixers.get(id(sink))
        if mixer is None or mixer.inner is not sink:
            known = {id(s) for s in self.sinks}
            known.update(id(s) for site in self.sites.values() for s in site.sinks or ())
            self._mixers = {k: m for k, m in self._mixers.items() if k in known or m.bed}
            mixer = self._mixers[id(sink)] = Mixer(sink)
        return mixer

    def _wants_follow_up(self, response: Response) -> bool:
        mode = self.settings.conversation.follow_up
        if mode == "off":
            return False
        return mode == "always" or response.expects_reply or response.speech.rstrip().endswith("?")

    # -- shutdown ----------------------------------------------------------------------------

    async def stop(self, grace: float | None = None) -> None:
        """Stop taking audio, let runs in flight finish within ``grace``, stop services."""
        grace = self.settings.pipeline.shutdown_grace if grace is None else grace
        self.accepting = False
        for task in (self.answers_cached, self.answers_anticipated):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        feeds = [*self._site_tasks, *self._feeds.values()]
        for task in feeds:
            task.cancel()
        await asyncio.gather(*feeds, return_exceptions=True)
        try:
            await asyncio.wait_for(self.drain(), grace)
        except TimeoutError:
            log.warning("runs still in flight after %.1f s; cancelling them", grace)
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        self._end_open_runs()
        self.emit(ev.Shutdown(self.dropped_utterances).event(None, self.settings.site_id))
        for component in reversed(list(self.components.values())):
            if hasattr(component, "stop"):
                try:
                    await asyncio.wait_for(component.stop(), 10)
                except Exception as exc:
                    log.warning("stopping %s failed: %s", type(component).__name__, exc)
        await self.in_thread(self.close)
        for component in self._registered:
            self.pm.unregister(component)
        self._registered.clear()
        self.executor.shutdown(wait=False, cancel_futures=True)

    def _end_open_runs(self) -> None:
        """Runs still open (a Wyoming request, a listening site) end ``shutdown`` now, while
        the observers still run: no retained ``listening``/``thinking`` after ``offline``."""
        for runs in [*self.sites.values(), *self._siteless.values()]:
            for run in list(runs.runs.values()):
                run.end("shutdown")

    def close(self) -> None:
        stages = [*self.sources, *self.sinks, *self.components.values()]
        stages += [s.segmenter.vad for s in self.sites.values()]
        stages += [w for s in self.sites.values() for w in s.wakes]
        for chain in (self.asr, self.tts):
            if chain is not None:
                stages += [engine for _, engine in chain.loaded]
        if self.voices is not None:
            self.voices.close()
        stages += [stage for _, stage in self._speaker_stages]
        for stage in stages:
            try:
                stage.close()
            except Exception as exc:
                log.warning("closing %s failed: %s", type(stage).__name__, exc)

    # -- helpers -----------------------------------------------------------------------------

    async def in_thread(
        self,
        fn: Callable[..., Any],
        *args: Any,
        timeout: float | None = None,
        stage: str = "",
        **kwargs: Any,
    ) -> Any:
        assert self.loop is not None
        future = self.loop.run_in_executor(self.executor, functools.partial(fn, *args, **kwargs))
        if timeout is None:
            return await future
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise StageTimeout(f"{stage or 'stage'} timed out after {timeout:g} s") from None

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _site(self, site_id: str | None) -> Site:
        site_id = site_id or self.settings.site_id
        if site_id not in self.sites:
            raise KeyError(f"no site {site_id!r}; sites: {', '.join(self.sites) or 'none'}")
        return self.sites[site_id]


async def _replay(audio: list[AudioChunk]) -> AsyncIterator[AudioChunk]:
    for chunk in audio:
        yield chunk


def _named_stages(make: Callable[..., Any], kind: str, names: list[str]) -> list[tuple[str, Any]]:
    return [(name, make(kind, name)) for name in names]


def _close_all(stages: list[Any]) -> None:
    for stage in stages:
        try:
            stage.close()
        except Exception as exc:
            log.warning("closing %s failed: %s", type(stage).__name__, exc)


def _set_sensitivity(wakes: list[Any], level: str) -> dict[str, float]:
    """Give each wake stage that has a sensitivity the level; their thresholds, by stage."""
    applied = {}
    for stage in wakes:
        if hasattr(stage, "set_sensitivity"):
            applied[type(stage).__name__] = stage.set_sensitivity(level)
    return applied


@contextlib.asynccontextmanager
async def _closing(chunks: AsyncIterator[AudioChunk]) -> AsyncIterator[AsyncIterator[AudioChunk]]:
    """A source's chunks, closed when the feed ends however it ends: a cancelled feed releases
    its device now, not when the generator is collected after the loop has gone."""
    try:
        yield chunks
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()
