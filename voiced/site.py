"""One listening place (a microphone, a file, a satellite): its conversation state machine.

idle -> (wake) -> listening -> thinking -> speaking -> idle, with a no-speech timeout after
the wake word, barge-in while speaking, follow-up listening after a question, and mute.
Time here is stream time (seconds of audio heard), so files replay the same at any speed.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from voiced import events as ev
from voiced.audio import PIPELINE_FORMAT, AudioChunk
from voiced.config import ConversationConfig
from voiced.early_commit import complete_command, strict_match
from voiced.events import Event
from voiced.run import Phase, Run, Speculation, Utterance
from voiced.segmenter import SpeechEnded, SpeechPaused, SpeechStarted, UtteranceSegmenter
from voiced.site_runs import SiteRuns
from voiced.speech_stream import SpeechStream
from voiced.stages import Sink, Wake, WakeDetection

log = logging.getLogger(__name__)


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
        claim_wake: Callable[[str, WakeDetection], Awaitable[bool]] | None = None,
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
        self._speculation: asyncio.Task[None] | None = None
        # The last speculation heard in full but not committed: (run, pause, speculation).
        # If the utterance then ends in that same pause, it is the normal transcript.
        self._heard: tuple[Run, int, Speculation] | None = None
        # A complete command heard before the pause was long enough to commit: committed
        # once the pause reaches ``early_commit_pause``, dropped if speech resumes first.
        self._ready: tuple[Run, int, Speculation] | None = None
        # How pauses went: started, no-room, stale, incomplete, committed (benchmarks, tests).
        self.speculations: Counter[str] = Counter()
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
        speech_barge_in = bool(self.speaking) and self.conversation.barge_in == "speech"
        if self.wakes:
            detection = self._detect(chunk)
            if detection is not None:
                if self.claim_wake is None or await self.claim_wake(self.site_id, detection):
                    self._on_wake(detection)
                return
            if self.awake_until is None and self.current is None and not speech_barge_in:
                return  # idle: only the wake word listens (VAD is not run, to save CPU)
        elif self.speaking and self.hears_playback and not speech_barge_in:
            return  # don't transcribe our own answer coming back through the microphone
        for event in self.segmenter.feed(chunk.audio):
            if isinstance(event, SpeechStarted):
                self._on_speech_start(event)
            elif isinstance(event, SpeechPaused):
                self._on_speech_pause(event)
            else:
                await self._on_speech_end(event)
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

    def cancel(self, reason: str = "cancelled") -> int:
        """Stop every run in flight here (playback included); returns how many."""
        cancelled = 0
        for run in list(self.runs.values()):
            if run is not self.current and run.cancel(reason):
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
            if detection is not None:
                for other in self.wakes:
                    other.reset()
                return detection
        return None

    def _on_wake(self, detection: WakeDetection) -> None:
        barge_in = bool(self.speaking or self.thinking)
        if barge_in:
            self.cancel("barge-in")
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
            self.cancel("barge-in")
        if self.current is None:
            self.current = self.start_run("speech")
        self.current.emit(ev.VadStart(round(self._time_of(event.stream_time), 3)))
        self._drop_stream()
        if self.open_stream is not None:
            self._stream = self.open_stream(self.current)
        self.update_state()

    async def _on_speech_end(self, event: SpeechEnded) -> None:
        self._ready = None  # the endpoint came first: _same_audio reuses it if it may
        speculation = self._same_audio(event)
        stream, self._stream = self._stream, None
        if stream is not None and speculation is None:
            stream.send_rest(event.audio)
        elif stream is not None:
            stream.abort()  # the speculation answers; the remote's pass is not needed
        run = self._speech_ended(event)
        if speculation is not None:
            self.speculations["reused"] += 1
            self.commit_early(run, replace(speculation, early=False))  # type: ignore[misc]
            return
        await self.submit(Utterance(run, event.audio, event.reason, stream=stream))

    def _drop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.abort()

    def _same_audio(self, event: SpeechEnded) -> Speculation | None:
        """A finished speculation of exactly this utterance, if there is one: made in the
        pause the utterance ended in (nothing but silence was heard after it), from the
        padded audio the normal pass would transcribe. Used only when it recognized a command
        strictly (a misheard or free-speech draft gets the full pass). One still running is
        not waited for: a speculation never delays committed work (nor this site's audio)."""
        run = self.current
        config = self.segmenter.config
        if event.reason != "silence" or run is None or not config.early_commit or self.muted:
            self._heard = None
            return None
        heard, self._heard = self._heard, None
        if heard is None or heard[0] is not run or heard[1] != event.pause or run.ended:
            return None
        speculation = heard[2]
        intent = speculation.intent
        recognizers = config.early_commit_recognizers
        if intent is None or intent.recognizer not in recognizers or not strict_match(intent):
            return None
        return speculation

    def _speech_ended(self, event: SpeechEnded) -> Run:
        self._drop_stream()  # an early commit answers from its speculation instead
        run = self.current or self.start_run("speech")
        self.current, self.awake_until = None, None
        stream_time = round(self._time_of(event.stream_time), 3)
        run.emit(ev.VadEnd(stream_time, round(event.seconds, 3), event.reason))
        run.speech_ended()
        run.set_phase(Phase.THINKING)  # queued for ASR (or answering an early commit)
        return run

    # -- early commit -----------------------------------------------------------------------

    def _on_speech_pause(self, event: SpeechPaused) -> None:
        """A pause inside the utterance: transcribe what was heard so far, off the loop."""
        if self.speculate is None or self.commit_early is None or self.current is None:
            return
        if self._speculation is not None:
            return  # one at a time; when it comes back stale, the pause gets its own
        self._speculation = asyncio.ensure_future(self._speculate(self.current, event))

    async def _speculate(self, run: Run, pause: SpeechPaused) -> None:
        assert self.speculate is not None and self.commit_early is not None
        # Heard as the normal endpoint would hear it if the speaker stopped here: with the
        # rest of the silence (Whisper hears a clipped ending differently, worse).
        config = self.segmenter.config
        rest = max(0.0, config.silence_seconds - self.segmenter.speculate_after)
        padded = pause.audio + bytes(2 * round(rest * PIPELINE_FORMAT.rate))
        try:
            speculation = await self.speculate(run, padded)
        finally:
            self._speculation = None
        if speculation is None:
            self.speculations["no-room"] += 1
            return
        self.speculations["started"] += 1
        if not self._unchanged(run, pause.pause):
            self.speculations["stale"] += 1
            if self._unchanged(run) and self.segmenter.pause != pause.pause:
                self._on_speech_pause(self.segmenter.snapshot())  # a newer pause, unheard
            return  # speech resumed (or the utterance ended): dropped without a trace
        recognizers = self.segmenter.config.early_commit_recognizers
        log.debug(
            "[%s] speculative transcript %r: %s",
            self.site_id,
            speculation.transcript.text,
            speculation.intent.to_dict() if speculation.intent else "no intent",
        )
        self._heard = (run, pause.pause, speculation)
        if not complete_command(speculation.intent, speculation.transcript.text, recognizers):
            self.speculations["incomplete"] += 1
            return  # free speech or half a command: the normal endpoint decides
        self._ready = (run, pause.pause, speculation)
        self._commit_ready()  # now if the pause is long enough, else when it is (feed)

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
