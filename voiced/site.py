"""One listening place (a microphone, a file, a satellite): its conversation state machine.

idle -> (wake) -> listening -> thinking -> speaking -> idle, with a no-speech timeout after
the wake word, barge-in while speaking, follow-up listening after a question, and mute.
Time here is stream time (seconds of audio heard), so files replay the same at any speed.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from voiced import events as ev
from voiced.audio import PIPELINE_FORMAT, AudioChunk
from voiced.config import ConversationConfig
from voiced.early_commit import strict_match, why_not
from voiced.events import Event
from voiced.run import Phase, Run, Speculation, Utterance
from voiced.segmenter import SpeechEnded, SpeechPaused, SpeechStarted, UtteranceSegmenter
from voiced.site_runs import SiteRuns
from voiced.speech_stream import SpeechStream
from voiced.stages import Sink, Wake, WakeDetection

log = logging.getLogger(__name__)

SPECULATIONS_LOGGED = 16


class Site(SiteRuns):
    """Feeds audio through wake and VAD and hands finished utterances to ``submit``.

    Its state (idle, listening, thinking, speaking) is derived from its runs' phases.
    """

    def __init__(
        self,
        site_id: str,
        segmenter: UtteranceSegmenter,
        wakes: list[Wake],
        conversation: ConversationConfig,
        emit: Callable[[Event], None],
        submit: Callable[[Utterance], Any],
        make_run: Callable[[str], Run],
        sinks: list[Sink] | None = None,
        claim_wake: Callable[[str, WakeDetection, float], Awaitable[bool]] | None = None,
        hears_playback: bool = True,
        muted: bool = False,
        speculate: Callable[[Run, bytes], Awaitable[Speculation | None]] | None = None,
        commit_early: Callable[[Run, Speculation], None] | None = None,
        open_stream: Callable[[Run], SpeechStream | None] | None = None,
    ) -> None:
        # Streaming ASR: an engine that starts on the utterance while it is spoken.
        self.open_stream = open_stream
        self._stream: SpeechStream | None = None
        # Early commit: ``speculate`` transcribes the utterance so far during a pause (None
        # when ASR has no room for it); ``commit_early`` answers a run from that speculation.
        self.speculate = speculate
        self.commit_early = commit_early
        self._speculation: asyncio.Task[Speculation | None] | None = None
        self._speculating_on: tuple[Run, int] | None = None  # its run and pause
        # An utterance that ended in the pause a pass is still transcribing: it waits for
        # that pass (answered from it, or then queued for the full pass) in this task.
        self._ending: asyncio.Task[None] | None = None
        self._ended_in: tuple[Run, int] | None = None  # that utterance's run and pause
        # The last speculation heard in full but not committed: (run, pause, speculation).
        # If the utterance then ends in that same pause, it is the normal transcript.
        self._heard: tuple[Run, int, Speculation] | None = None
        # A complete command heard before the pause was long enough to commit: committed
        # once the pause reaches ``early_commit_pause``, dropped if speech resumes first.
        self._ready: tuple[Run, int, Speculation] | None = None
        # Enrollment: the next utterance is wanted as audio, not transcribed or answered.
        self._capture: asyncio.Future[bytes] | None = None
        # How pauses went: started, no-room, stale, incomplete, committed (benchmarks, tests).
        self.speculations: Counter[str] = Counter()
        # What the latest passes heard and why they did or did not commit (benchmarks, logs).
        self.speculation_log: deque[dict[str, Any]] = deque(maxlen=SPECULATIONS_LOGGED)
        self.claim_wake = claim_wake  # multi-room arbiter: may this site act on its wake word?
        # A microphone beside a speaker hears our answers; a file or a pipe does not.
        self.hears_playback = hears_playback
        self.segmenter = segmenter
        self.wakes = wakes
        self.conversation = conversation
        self.submit = submit
        self.make_run = make_run
        self.sinks = sinks
        self.current: Run | None = None  # the run being listened to
        self.awake_until: float | None = None  # stream time; None = not awake
        self.clock = 0.0  # seconds of audio fed here (the segmenter counts only what VAD saw)
        # Another assistant hearing this microphone for a while (Home Assistant's pipeline):
        # while set, the audio goes to it and not through this site's own wake and VAD.
        self.lent_to: Callable[[AudioChunk], None] | None = None
        self.wake_words: set[str] | None = None  # the wake words acted on; None: every one
        if muted:
            emit(ev.Muted(True, "config").event(None, site_id))
        super().__init__(site_id, emit, muted)

    # -- runs -------------------------------------------------------------------------------

    def start_run(self, reason: str) -> Run:
        run = self.adopt(self.make_run(self.site_id))
        return run.start(reason)

    def _run_changed(self, run: Run) -> None:
        if run.ended and run is self.current:
            self.current, self.awake_until = None, None
        super()._run_changed(run)

    def awake(self) -> bool:
        return self.awake_until is not None

    # -- audio in ---------------------------------------------------------------------------

    async def feed(self, chunk: AudioChunk) -> None:
        if self.muted:
            return
        self.clock += chunk.seconds
        if self.lent_to is not None:
            self.lent_to(chunk)
            return
        await self._hear(chunk)

    async def _hear(self, chunk: AudioChunk) -> None:
        """This site's own wake word, VAD and utterances on a chunk of its audio."""
        if not await self._wants_speech(chunk):
            return
        await self._segment(chunk)
        self._after_segment()

    async def _wants_speech(self, chunk: AudioChunk) -> bool:
        """Whether the VAD hears ``chunk``: runs the wake word first (a detection is claimed
        and wakes the site, and the chunk goes no further)."""
        speech_barge_in = bool(self.speaking) and self.conversation.barge_in == "speech"
        if self.wakes:
            detection = self._detect(chunk)
            if detection is not None:
                claimed = self.claim_wake is None or await self.claim_wake(
                    self.site_id, detection, chunk.timestamp
                )
                if claimed:
                    self._on_wake(detection)
                return False
            if self.awake_until is None and self.current is None and not speech_barge_in:
                return False  # idle: only the wake word listens (VAD is not run, to save CPU)
        elif (self.speaking or self.playing_media) and self.hears_playback and not speech_barge_in:
            return False  # don't transcribe our own answer coming back through the microphone
        return True

    async def _segment(self, chunk: AudioChunk) -> None:
        """Feed ``chunk`` to the segmenter and act on the speech events it gives."""
        for event in self.segmenter.feed(chunk.audio):
            if isinstance(event, SpeechStarted):
                self._on_speech_start(event)
            elif isinstance(event, SpeechPaused):
                self._on_speech_pause(event)
            else:
                await self._on_speech_end(event)

    def _after_segment(self) -> None:
        """Commit a ready utterance, stream the speech so far, end a listen that timed out."""
        if self._ready is not None:
            self._commit_ready()
        if self._stream is not None and self.segmenter.in_speech:
            self._stream.send(self.segmenter.utterance_since(self._stream.sent))
        if (
            self.awake_until is not None
            and not self.segmenter.in_speech
            and self.clock > self.awake_until
        ):
            self._end_listening("no-speech-timeout")

    async def finish(self) -> None:
        """End of stream: an utterance in progress is submitted as it is."""
        for event in self.segmenter.flush():
            if isinstance(event, SpeechEnded):
                await self._on_speech_end(event)
        if self.current is not None:
            self._end_listening("end-of-stream")
        if self._speculation is not None:
            await asyncio.gather(self._speculation, return_exceptions=True)
        if self._ending is not None:
            await asyncio.gather(self._ending, return_exceptions=True)

    # -- control ----------------------------------------------------------------------------

    def set_muted(self, muted: bool, reason: str = "command") -> None:
        """Stop (or resume) listening: no wake word, no VAD; a run being listened to ends.

        An answer already playing finishes; ``cancel()`` stops it.
        """
        if muted == self.muted:
            return
        self.muted = muted
        self.segmenter.reset()
        self._drop_stream()
        for wake in self.wakes:
            wake.reset()
        if muted and self.current is not None:
            self._end_listening("muted")
        self.emit(ev.Muted(muted, reason).event(None, self.site_id))
        self.update_state()

    def listen(self, reason: str = "command", seconds: float | None = None) -> Run:
        """Start listening without a wake word (MQTT listen, follow-up, after a wake word)."""
        if self.current is None:
            self.current = self.start_run(reason)
        window = seconds if seconds is not None else self.conversation.wake_timeout
        self.awake_until = self.clock + window
        self.segmenter.reset()
        self._drop_stream()
        self.update_state()
        return self.current

    def lend(self, listener: Callable[[AudioChunk], None] | None) -> None:
        """Hand this microphone's audio to ``listener`` (None: hear it here again). A run being
        listened to ends; wake and VAD start afresh when the audio comes back."""
        if listener is not None and self.current is not None:
            self._end_listening("lent")
        self.lent_to = listener
        self.segmenter.reset()
        self._drop_stream()
        for wake in self.wakes:
            wake.reset()

    async def capture_next(self, seconds: float) -> bytes:
        """The next utterance heard here within ``seconds`` (its audio; not transcribed or
        answered): enrollment's sentences. Raises TimeoutError."""
        if self._capture is not None and not self._capture.done():
            raise RuntimeError(f"site {self.site_id} is already recording an utterance")
        self._capture = asyncio.get_running_loop().create_future()
        self.listen(reason="enrollment", seconds=seconds)
        try:
            limit = seconds + self.segmenter.config.max_command_seconds
            return await asyncio.wait_for(asyncio.shield(self._capture), limit)
        finally:
            self._capture = None

    def detached(self) -> None:
        """The site's audio is gone (its source ended or was cut off): a run still listening
        ends; runs answering go on."""
        if self.current is not None:
            self._end_listening("detached")

    def cancel(self, reason: str = "cancelled", media: bool = True) -> int:
        """Stop every run in flight here (playback included; media playing in the background
        only when ``media``); returns how many."""
        cancelled = 0
        for run in list(self.runs.values()):
            if run is self.current or (run.background and not media):
                continue
            if run.cancel(reason):
                cancelled += 1
        if self.current is not None:
            self._end_listening(reason)
        return cancelled

    # -- internals --------------------------------------------------------------------------

    def _detect(self, chunk: AudioChunk) -> WakeDetection | None:
        busy = bool(self.speaking or self.thinking)
        if busy and self.conversation.barge_in != "wake":
            return None  # barge-in off (or by speech): a wake word doesn't cut the answer
        if not busy and (self.awake_until is not None or self.current is not None):
            return None  # already listening for the command
        for wake in self.wakes:
            detection = wake.process(chunk)
            if detection is not None and self.wake_words is not None:
                detection = detection if detection.name in self.wake_words else None
            if detection is not None:
                for other in self.wakes:
                    other.reset()
                return detection
        return None

    def _on_wake(self, detection: WakeDetection) -> None:
        barge_in = bool(self.speaking or self.thinking)
        if barge_in:
            self.cancel("barge-in", media=False)
        if self.current is not None:
            self._end_listening("wake-again")
        run = self.listen(reason="barge-in" if barge_in else "wake")
        run.emit(
            ev.Wake(
                name=detection.name,
                score=round(float(detection.score), 4),
                stream_time=round(self.clock, 3),
                barge_in=barge_in,
                extra=dict(detection.data),
            )
        )

    def _on_speech_start(self, event: SpeechStarted) -> None:
        if self.speaking and self.conversation.barge_in == "speech":
            self.cancel("barge-in", media=False)
        if self.current is None:
            self.current = self.start_run("speech")
        self.current.emit(ev.VadStart(round(self._time_of(event.stream_time), 3)))
        self._drop_stream()
        if self.open_stream is not None:
            self._stream = self.open_stream(self.current)
        self.update_state()

    async def _on_speech_end(self, event: SpeechEnded) -> None:
        if self._capture is not None and not self._capture.done():
            self._speech_ended(event).end("captured")
            self._capture.set_result(event.audio)
            return
        if self._ending is not None:  # the utterance before this one is queued first
            await asyncio.gather(self._ending, return_exceptions=True)
        self._ready = None  # the endpoint came first: _same_audio reuses it if it may
        speculation = self._same_audio(event)
        in_flight = self._in_flight(event) if speculation is None else None
        stream, self._stream = self._stream, None
        run = self._speech_ended(event)
        if speculation is not None:
            if stream is not None:
                stream.abort()  # the speculation answers; the remote's pass is not needed
            self._answer_from(run, speculation)
        elif in_flight is not None:
            self._ended_in = (run, event.pause)
            self._ending = asyncio.ensure_future(self._end_after(run, event, stream, in_flight))
        else:
            await self._submit(run, event, stream)

    async def _end_after(
        self,
        run: Run,
        event: SpeechEnded,
        stream: SpeechStream | None,
        pass_: asyncio.Task[Speculation | None],
    ) -> None:
        """The utterance ended in the pause a pass is still transcribing, with nothing but
        silence after it: that pass is the normal one (a second, full pass queued beside it
        would only share the CPU with it). A strict command in it is answered from it; else
        the utterance goes to the full pass as usual."""
        try:
            speculation = await asyncio.shield(pass_)
        except Exception:
            speculation = None
        finally:
            self._ending = self._ended_in = None
        if speculation is not None and self._reusable(speculation) and not run.cancelled:
            if stream is not None:
                stream.abort()
            self._answer_from(run, speculation)
            return
        await self._submit(run, event, stream)

    async def _submit(self, run: Run, event: SpeechEnded, stream: SpeechStream | None) -> None:
        if stream is not None:
            stream.send_rest(event.audio)
        await self.submit(Utterance(run, event.audio, event.reason, stream=stream))

    def _answer_from(self, run: Run, speculation: Speculation) -> None:
        """The pass made in the pause the utterance ended in answers it at its endpoint."""
        self.speculations["reused"] += 1
        self.commit_early(run, replace(speculation, early=False))  # type: ignore[misc]

    def _drop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.abort()

    def _ended_in_pause(self, event: SpeechEnded) -> bool:
        """The utterance ended in silence (or with the stream) in the pause ``event.pause``:
        what a pass made in that pause heard is all of it but silence."""
        config = self.segmenter.config
        return (
            event.reason in ("silence", "end-of-stream")
            and config.early_commit
            and not self.muted
            and self.current is not None
        )

    def _same_audio(self, event: SpeechEnded) -> Speculation | None:
        """A finished speculation of exactly this utterance, if there is one: made in the
        pause the utterance ended in (nothing but silence was heard after it), from the
        padded audio the normal pass would transcribe. Used only when it recognized a command
        strictly (a misheard or free-speech draft gets the full pass)."""
        heard, self._heard = self._heard, None
        if not self._ended_in_pause(event) or heard is None:
            return None
        run = self.current
        if heard[0] is not run or heard[1] != event.pause or run.ended:
            return None
        return heard[2] if self._reusable(heard[2]) else None

    def _in_flight(self, event: SpeechEnded) -> asyncio.Task[Speculation | None] | None:
        """The pass still transcribing the pause this utterance ended in, if one is."""
        if not self._ended_in_pause(event) or self._speculation is None:
            return None
        if self._speculating_on != (self.current, event.pause):
            return None
        return self._speculation

    def _reusable(self, speculation: Speculation) -> bool:
        """A strict command of the early-commit recognizers: what the full pass would act on
        too (a misheard or free-speech draft gets the full pass: rescoring, the LLM)."""
        intent = speculation.intent
        recognizers = self.segmenter.config.early_commit_recognizers
        return intent is not None and intent.recognizer in recognizers and strict_match(intent)

    def _speech_ended(self, event: SpeechEnded) -> Run:
        self._drop_stream()  # an early commit answers from its speculation instead
        run = self.current or self.start_run("speech")
        self.current, self.awake_until = None, None
        stream_time = round(self._time_of(event.stream_time), 3)
        run.emit(ev.VadEnd(stream_time, round(event.seconds, 3), event.reason))
        run.speech_ended()
        run.identify(event.audio)  # who spoke, beside ASR (when the daemon tells speakers)
        run.set_phase(Phase.THINKING)  # queued for ASR (or answering an early commit)
        return run

    # -- early commit -----------------------------------------------------------------------

    def _on_speech_pause(self, event: SpeechPaused) -> None:
        """A pause inside the utterance: transcribe what was heard so far, off the loop."""
        if self.speculate is None or self.commit_early is None or self.current is None:
            return
        if self._speculation is not None:
            return  # one at a time; when it comes back stale, the pause gets its own
        self._speculating_on = (self.current, event.pause)
        self._speculation = asyncio.ensure_future(self._speculate(self.current, event))

    async def _speculate(self, run: Run, pause: SpeechPaused) -> Speculation | None:
        """One pass on the utterance so far; it acts when the pause is still on and the
        command complete, and is returned for the endpoint that may be waiting for it."""
        assert self.speculate is not None and self.commit_early is not None
        # Heard as the normal endpoint would hear it if the speaker stopped here: with the
        # rest of the silence (Whisper hears a clipped ending differently, worse), and no more
        # of it than the endpoint's (a pause taken late already holds some).
        rest = max(0.0, self.segmenter.endpoint_silence - pause.silence)
        padded = pause.audio + bytes(2 * round(rest * PIPELINE_FORMAT.rate))
        entry: dict[str, Any] = {"pause": pause.pause, "silence_s": self._silence()}
        self.speculation_log.append(entry)
        try:
            speculation = await self.speculate(run, padded)
        finally:
            self._speculation = self._speculating_on = None
        entry["back_s"] = self._silence()
        if speculation is None:
            self.speculations["no-room"] += 1
            entry["verdict"] = "no room"
            return None
        self.speculations["started"] += 1
        entry |= {
            "asr_s": round(speculation.asr_seconds, 3),
            "audio_s": round(speculation.audio_seconds, 3),
            "text": speculation.transcript.text,
        }
        recognizers = self.segmenter.config.early_commit_recognizers
        verdict = why_not(speculation.intent, speculation.transcript.text, recognizers)
        if self._ended_in == (run, pause.pause):
            entry["verdict"] = f"{verdict or 'complete'}, at the endpoint"
            return speculation  # the utterance ended in this pause: _end_after decides
        if not self._unchanged(run, pause.pause):
            self.speculations["stale"] += 1
            entry["verdict"] = "stale"
            if self._unchanged(run) and self.segmenter.pause != pause.pause:
                self._on_speech_pause(self.segmenter.snapshot())  # a newer pause, unheard
            return None  # speech resumed (or the utterance ended): dropped without a trace
        entry["verdict"] = verdict or "complete"
        log.debug(
            "[%s] speculative transcript %r: %s (%s)",
            self.site_id,
            speculation.transcript.text,
            speculation.intent.to_dict() if speculation.intent else "no intent",
            entry["verdict"],
        )
        self._heard = (run, pause.pause, speculation)
        if verdict is not None:
            self.speculations["incomplete"] += 1
            return speculation  # free speech or half a command: the normal endpoint decides
        self._ready = (run, pause.pause, speculation)
        self._commit_ready()  # now if the pause is long enough, else when it is (feed)
        return speculation

    def _silence(self) -> float | None:
        """The pause so far (s), or None once speech resumed or the utterance ended."""
        return round(self.segmenter.silence, 3) if self.segmenter.pausing else None

    def _commit_ready(self) -> None:
        """Commit the complete speculation waiting for its pause to reach
        ``early_commit_pause``; drop it once speech resumed or the run is no longer heard."""
        assert self._ready is not None and self.commit_early is not None
        run, pause, speculation = self._ready
        if not self._unchanged(run, pause):
            self._ready = None
            self.speculations["stale"] += 1
            return
        if not self.segmenter.paused:
            return  # the pause is still too short to tell an end from a breath
        self._ready = self._heard = None
        self.speculations["committed"] += 1
        self._speech_ended(self.segmenter.commit("early-commit"))
        self.commit_early(run, speculation)

    def _unchanged(self, run: Run, pause: int | None = None) -> bool:
        """The run is still being heard, in a pause, and (``pause``) nothing was said since."""
        return (
            run is self.current
            and not run.ended
            and not self.muted
            and self.segmenter.config.early_commit
            and self.segmenter.pausing
            and (pause is None or self.segmenter.pause == pause)
        )

    def _time_of(self, segmenter_time: float) -> float:
        """A segmenter time on this site's clock (the segmenter counts only what it was fed)."""
        return self.clock - (self.segmenter.stream_time - segmenter_time)

    def _end_listening(self, reason: str) -> None:
        self._drop_stream()
        run, self.current, self.awake_until = self.current, None, None
        if run is not None:
            run.end(reason)
        self.update_state()
