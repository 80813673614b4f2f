"""One Wyoming connection: requests from Home Assistant, or a satellite streaming its room."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from voiced_plugins.wyoming_server.conversation import PEER_EXECUTES, intent_event, transcript_reply
from voiced_plugins.wyoming_server.reading import IdleTimeout, ProtocolError, ReadLimits, read_event
from voiced_plugins.wyoming_server.record import recognition_record
from voiced_plugins.wyoming_server.satellite import SatelliteSource, peer_name
from wyoming.asr import Transcribe
from wyoming.asr import Transcript as WyTranscript
from wyoming.audio import AudioChunk as WyomingChunk
from wyoming.audio import AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event as WyEvent
from wyoming.handle import Handled, NotHandled
from wyoming.info import Describe
from wyoming.info import Info as WyInfo
from wyoming.intent import Intent as WyIntent
from wyoming.intent import NotRecognized, Recognize
from wyoming.ping import Ping, Pong
from wyoming.pipeline import PipelineStage, RunPipeline
from wyoming.satellite import PauseSatellite, RunSatellite
from wyoming.server import AsyncEventHandler
from wyoming.tts import (
    Synthesize,
    SynthesizeChunk,
    SynthesizeStart,
    SynthesizeStop,
    SynthesizeStopped,
)
from wyoming.wake import Detect, Detection, NotDetected

from voiced.api import events as ev
from voiced.api.app import Phase, Run, StageFailed
from voiced.api.audio import (
    PCM_BYTES_PER_SECOND,
    AudioChunk,
    AudioFormat,
    AudioFormatError,
    StreamConverter,
)
from voiced.api.events import error_event
from voiced.api.intents import Intent, Transcript
from voiced.api.text import TextTooLong, check_say_text, split_sentences

if TYPE_CHECKING:
    from voiced_plugins.wyoming_server import WyomingService

log = logging.getLogger(__name__)

WRITE_TIMEOUT = 10.0  # seconds a write may wait for a peer that stopped reading
MAX_REQUEST_SECONDS = 60.0  # one transcribe/detect request; more is a client that never stops


class RequestError(Exception):
    """A request this connection can't serve; answered with a Wyoming ``error`` event."""

    def __init__(self, text: str, code: str) -> None:
        super().__init__(text)
        self.code = code


class Session(AsyncEventHandler):
    """Serves one connection; becomes a site when the peer runs as a satellite."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        service: WyomingService,
        site_id: str | None = None,
        refuse: str | None = None,
    ) -> None:
        super().__init__(reader, writer)
        self.refuse = refuse  # why this connection is answered with an error and closed
        self.dialed = False  # voiced connected to this satellite server itself
        self.service = service
        self.app = service.app
        self.peer = peer_name(writer)
        self.host = self.peer.rsplit("-", 1)[0]  # the peer's address without its port
        self.site_id = site_id or f"wyoming-{self.host}"
        self.closed = False
        self.detached = asyncio.Event()  # set once its satellite site is given up
        self._lock = asyncio.Lock()
        self._pending: set[asyncio.Task[Any]] = set()
        # request state: "transcribe" | "detect" | None
        self._request: str | None = None
        self._language: str | None = None
        self._converter: StreamConverter | None = None
        self._audio = bytearray()
        self._wakes: list[Any] | None = None
        self._wake_names: set[str] | None = None
        self._detected = False
        self._run: Run | None = None  # the run of the audio request or speech stream open now
        self._stream_text: str | None = None  # synthesize-start .. -stop
        self._stream_started: AudioFormat | None = None
        # satellite state
        self.satellite_name: str | None = None
        self.source: SatelliteSource | None = None

    # -- writing ---------------------------------------------------------------------------

    async def send(self, event: WyEvent) -> None:
        """Write one event; raises ConnectionError once the peer is gone."""
        if self.closed:
            raise ConnectionResetError("the Wyoming peer disconnected")
        async with self._lock:
            try:
                await asyncio.wait_for(self.write_event(event), WRITE_TIMEOUT)
            except TimeoutError:
                # a peer that stopped reading (its Wi-Fi went away): drop it, don't hang the run
                self.closed = True
                self.writer.transport.abort()
                raise ConnectionResetError(
                    f"the Wyoming peer read nothing for {WRITE_TIMEOUT:g} s"
                ) from None
            except (ConnectionError, OSError, RuntimeError):
                self.closed = True
                raise

    def send_soon(self, event: WyEvent) -> None:
        """Queue a write from synchronous code (event observers); order is kept."""
        if self.closed:
            return
        task = asyncio.ensure_future(self._send_quietly(event))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _send_quietly(self, event: WyEvent) -> None:
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            await self.send(event)

    # -- reading ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve until the peer leaves; a peer that vanishes (reset, timeout) is no error.
        A header voiced can't read is answered with an ``error`` event, then the connection
        closes; so does one idle past ``idle_seconds`` (a satellite may stay quiet)."""
        if self.refuse is not None:
            await self._error(self.refuse, "refused")
            self.closed = True
            self.writer.close()
            return
        options = self.service.options
        try:
            while not self.closed:
                satellite = self.dialed or self.source is not None or bool(self.satellite_name)
                limits = ReadLimits(
                    None if satellite else options.idle_seconds,  # a satellite may stay quiet
                    options.read_seconds,
                    options.max_event_bytes,
                )
                try:
                    event = await read_event(self.reader, limits)
                except ProtocolError as exc:
                    log.warning("[%s] wyoming peer %s: %s", self.site_id, self.peer, exc)
                    await self._error(str(exc), "protocol")
                    break
                except IdleTimeout as exc:
                    log.info("[%s] wyoming peer %s closed: %s", self.site_id, self.peer, exc)
                    break
                if event is None or not await self.handle_event(event):
                    break
        except (ConnectionError, OSError, TimeoutError) as exc:
            log.info("[%s] wyoming peer %s went away: %s", self.site_id, self.peer, exc)
        finally:
            await self.disconnect()
            self.writer.close()

    async def handle_event(self, event: WyEvent) -> bool:
        try:
            await self._dispatch(event)
        except RequestError as exc:
            log.warning("[%s] wyoming %s: %s", self.site_id, event.type, exc)
            await self._error(str(exc), exc.code)
        except StageFailed as exc:  # its error event is out; the peer hears why
            await self._error(exc.message, exc.stage)
        except (ConnectionError, OSError):
            return False
        except Exception as exc:  # a bad request must not take the server down
            log.exception("[%s] wyoming %s failed", self.site_id, event.type)
            await self._error(f"{type(exc).__name__}: {exc}", event.type)
        return not self.closed

    async def _dispatch(self, event: WyEvent) -> None:
        """Act on one event from the peer (``_EVENT_HANDLERS``); an unknown type is ignored."""
        kind = event.type
        for event_class, handler in _EVENT_HANDLERS:
            if event_class.is_type(kind):
                await handler(self, event)
                return
        log.debug("[%s] wyoming: ignoring %s", self.site_id, kind)

    # -- one method per event type, for _dispatch --------------------------------------------

    async def _got_audio_start(self, event: WyEvent) -> None:
        """audio-start: a request's or a satellite's audio begins."""
        self._on_audio_start(event)

    async def _got_audio_stop(self, event: WyEvent) -> None:
        """audio-stop: the request's audio is complete."""
        await self._on_audio_stop()

    async def _got_describe(self, event: WyEvent) -> None:
        """describe: answer with what this server offers."""
        await self.send(self.service.info().event())

    async def _got_transcribe(self, event: WyEvent) -> None:
        """transcribe: a speech-to-text request; its audio follows."""
        self._need("asr")
        request = Transcribe.from_event(event)
        self._begin("transcribe")
        self._language = request.language

    async def _got_detect(self, event: WyEvent) -> None:
        """detect: a wake word request; its audio follows."""
        self._need("wake")
        names = Detect.from_event(event).names
        await self._load_wakes(names)
        self._begin("detect")

    async def _got_synthesize(self, event: WyEvent) -> None:
        """synthesize: speak a text (while streaming, this is the compatibility copy)."""
        if self._stream_text is None:  # while streaming, this is the compatibility copy
            self._need("tts")
            await self._synthesize(Synthesize.from_event(event).text)

    async def _got_synthesize_start(self, event: WyEvent) -> None:
        """synthesize-start: a text to speak arrives in chunks."""
        self._need("tts")
        self._open_run("wyoming-synthesize", Phase.SPEAKING)
        self._stream_text, self._stream_started = "", None

    async def _got_synthesize_chunk(self, event: WyEvent) -> None:
        """synthesize-chunk: more of the streamed text."""
        await self._synthesize_chunk(SynthesizeChunk.from_event(event).text)

    async def _got_synthesize_stop(self, event: WyEvent) -> None:
        """synthesize-stop: the streamed text is complete."""
        await self._synthesize_stop()

    async def _got_recognize(self, event: WyEvent) -> None:
        """recognize: an intent request for a text."""
        self._need("intent")
        await self._recognize_request(Recognize.from_event(event).text)

    async def _got_transcript(self, event: WyEvent) -> None:
        """transcript: a text to answer (a peer that did its own speech-to-text)."""
        await self._on_transcript(WyTranscript.from_event(event).text)

    async def _got_intent(self, event: WyEvent) -> None:
        """intent: an intent to handle."""
        self._need("handle")
        await self._handle_intent(WyIntent.from_event(event))

    async def _got_run_satellite(self, event: WyEvent) -> None:
        """run-satellite: the peer becomes a satellite of this server."""
        await self._start_satellite(event.data.get("site_id") or event.data.get("name"))

    async def _got_run_pipeline(self, event: WyEvent) -> None:
        """run-pipeline: the satellite asks for a pipeline run."""
        await self._run_pipeline(RunPipeline.from_event(event))

    async def _got_pause_satellite(self, event: WyEvent) -> None:
        """pause-satellite: the satellite stops streaming."""
        await self._stop_satellite("paused")

    async def _got_info(self, event: WyEvent) -> None:
        """info: the peer's own description (a satellite's area or name)."""
        satellite = event.data.get("satellite") or {}
        self.satellite_name = satellite.get("area") or satellite.get("name")

    async def _got_ping(self, event: WyEvent) -> None:
        """ping: answer pong."""
        await self.send(Pong(text=Ping.from_event(event).text).event())

    async def disconnect(self) -> None:
        """The peer went away: end its site's stream; runs in flight end quietly."""
        self.closed = True
        self._close_run("disconnected")
        await self._stop_satellite("disconnected")
        if self._wakes is not None:
            self.service.release_wakes(self._wakes)
        self._wakes = None
        self.service.sessions.discard(self)

    # -- audio requests ---------------------------------------------------------------------

    def _need(self, service: str) -> None:
        if service not in self.service.services:
            offered = ", ".join(sorted(self.service.services))
            raise RequestError(
                f"voiced does not offer {service} here (offered: {offered}; "
                f"see [stages.service.wyoming] services)",
                "not-offered",
            )

    def _begin(self, request: str) -> None:
        if self._stream_text is None:  # a detect left open ends when the next request begins
            self._close_run("replaced")
        self._request = request
        self._audio.clear()
        self._converter = None
        self._detected = False
        for wake in self._wakes or []:
            wake.reset()
        if request == "detect":
            self._open_run("wyoming-detect", Phase.LISTENING)

    # -- runs of requests --------------------------------------------------------------------

    def _open_run(self, reason: str, phase: Phase) -> Run:
        """The run of a request that spans several events (detect, synthesize-start..stop)."""
        self._close_run("replaced")
        self._run = self.app.start_run(self.site_id, reason, phase=phase, via="wyoming")
        return self._run

    def _close_run(self, reason: str) -> None:
        run, self._run = self._run, None
        if run is not None:
            run.end(reason)

    @contextlib.asynccontextmanager
    async def _request_run(self, reason: str, phase: Phase) -> AsyncIterator[Run]:
        """The run of a one-event request: done when the block ends, else why it did not."""
        run = self.app.start_run(self.site_id, reason, phase=phase, via="wyoming")
        try:
            yield run
        except asyncio.CancelledError:
            run.end("cancelled")
            raise
        except (ConnectionError, OSError):
            run.end("disconnected")
            raise
        except Exception:
            run.end("error")
            raise
        run.end("done")

    # -- audio requests ---------------------------------------------------------------------

    def _on_audio_start(self, event: WyEvent) -> None:
        start = AudioStart.from_event(event)
        fmt = AudioFormat(start.rate, start.width, start.channels)
        if self._request is None:
            return  # a satellite's stream: chunks carry their own format
        try:
            self._converter = StreamConverter(fmt)
        except AudioFormatError as exc:
            raise RequestError(str(exc), "audio-format") from None

    async def _on_chunk(self, event: WyEvent) -> None:
        chunk = WyomingChunk.from_event(event)
        fmt = AudioFormat(chunk.rate, chunk.width, chunk.channels)
        if self._request is None:
            if self.source is None:  # audio without a request: a streaming satellite
                if "satellite" not in self.service.services:
                    return
                await self._start_satellite(None)
            if self.source is not None and self.app.accepting:  # not while shutting down
                try:
                    self.source.feed(chunk.audio, fmt)
                except AudioFormatError as exc:
                    raise RequestError(f"audio-chunk: {exc}", "audio-format") from None
            return
        try:
            await self._on_request_chunk(chunk, fmt)
        except AudioFormatError as exc:
            self._request = None
            self._audio.clear()
            raise RequestError(f"audio-chunk: {exc}", "audio-format") from None

    async def _on_request_chunk(self, chunk: WyomingChunk, fmt: AudioFormat) -> None:
        if self._converter is None or self._converter.format != fmt:
            self._converter = StreamConverter(fmt)
        if self._request == "transcribe":
            seconds = len(self._audio) / PCM_BYTES_PER_SECOND
            seconds += len(chunk.audio) / fmt.bytes_per_second
            if seconds > MAX_REQUEST_SECONDS:  # checked before converting it
                self._request = None
                self._audio.clear()
                raise RequestError(
                    f"transcribe: more than {MAX_REQUEST_SECONDS:g} s of audio", "too-long"
                )
        pcm = self._converter.convert(chunk.audio)
        if self._request == "transcribe":
            self._audio += pcm
        elif self._request == "detect" and not self._detected:
            await self._detect(AudioChunk(pcm), chunk.timestamp)

    async def _on_audio_stop(self) -> None:
        request, self._request = self._request, None
        if request == "transcribe":
            if self._converter is not None:
                self._audio += self._converter.convert(b"", last=True)
            await self._transcribe(bytes(self._audio), self._language)
            self._audio.clear()
        elif request == "detect" and not self._detected:
            self._close_run("not-detected")
            await self.send(NotDetected().event())

    async def _transcribe(self, pcm: bytes, language: str | None) -> None:
        async with self._request_run("wyoming-transcribe", Phase.THINKING) as run:
            transcript = await self.app.transcribe(run, pcm, language)
            text = "" if transcript.no_speech else transcript.text.strip()
            event = WyTranscript(text=text, language=transcript.language).event()
            event.data["voiced"] = recognition_record(transcript.data)
            await self.send(event)

    async def _load_wakes(self, names: list[str] | None) -> None:
        if self._wakes is None:
            self._wakes = await self.service.new_wakes()
        wanted = set(names or [])
        known = set(self.service.wake_words)
        if wanted and not wanted & known:
            raise RequestError(
                f"detect: no wake word named {', '.join(sorted(wanted))}; "
                f"available: {', '.join(sorted(known)) or 'none'}",
                "wake-word",
            )
        self._wake_names = wanted & known or None

    async def _detect(self, chunk: AudioChunk, timestamp: int | None) -> None:
        for wake in self._wakes or []:
            detection = await self.app.in_thread(wake.process, chunk)
            if detection is None:
                continue
            if self._wake_names and detection.name not in self._wake_names:
                continue
            self._detected = True
            for other in self._wakes or []:
                other.reset()
            await self.send(Detection(name=detection.name, timestamp=timestamp).event())
            run = self._run or self._open_run("wyoming-detect", Phase.LISTENING)
            score = round(float(detection.score), 4)
            run.emit(ev.Wake(name=detection.name, score=score, extra=dict(detection.data)))
            self._close_run("done")
            return

    # -- speech synthesis --------------------------------------------------------------------

    def _check_text(self, text: str) -> None:
        try:
            check_say_text(text, self.app.settings.pipeline.max_say_chars, "synthesize")
        except TextTooLong as exc:
            raise RequestError(str(exc), "too-long") from None

    async def _split(self, text: str) -> list[str]:
        return await self.app.in_thread(split_sentences, text)  # long text: off the loop

    async def _synthesize(self, text: str) -> None:
        self._check_text(text)
        async with self._request_run("wyoming-synthesize", Phase.SPEAKING) as run:
            started = await self._speak_sentences(run, await self._split(text), None, last=True)
            await self.send(AudioStop().event())
        if started is None:
            log.info("[%s] synthesize: nothing to say in %r", self.site_id, text)

    async def _synthesize_chunk(self, text: str) -> None:
        if self._stream_text is None or self._run is None:
            raise RequestError("synthesize-chunk without synthesize-start", "synthesize")
        try:
            self._check_text(self._stream_text + text)
        except RequestError:
            self._stream_text = None
            self._close_run("error")
            raise
        self._stream_text += text
        sentences = await self._split(self._stream_text)
        if len(sentences) > 1:  # the last one may still grow
            done, rest = sentences[:-1], sentences[-1]
            self._stream_started = await self._speak_sentences(
                self._run, done, self._stream_started, last=False
            )
            self._stream_text = rest

    async def _synthesize_stop(self) -> None:
        if self._stream_text is None or self._run is None:
            raise RequestError("synthesize-stop without synthesize-start", "synthesize")
        rest, self._stream_text = self._stream_text, None
        try:
            await self._speak_sentences(
                self._run, await self._split(rest), self._stream_started, last=True
            )
        except Exception:
            self._close_run("error")
            raise
        self._stream_started = None
        await self.send(AudioStop().event())
        await self.send(SynthesizeStopped().event())
        self._close_run("done")

    async def _speak_sentences(
        self, run: Run, sentences: list[str], started: AudioFormat | None, *, last: bool
    ) -> AudioFormat | None:
        """Synthesize sentence by sentence, streaming each as soon as it's made."""
        samples = self.service.options.samples_per_chunk
        async for chunk in run.stream_speech(sentences):
            fmt = chunk.format
            if started is None:
                started = fmt
                await self.send(AudioStart(fmt.rate, fmt.width, fmt.channels).event())
            step = samples * fmt.width * fmt.channels
            for offset in range(0, len(chunk.audio), step):
                await self.send(
                    WyomingChunk(
                        fmt.rate, fmt.width, fmt.channels, chunk.audio[offset : offset + step]
                    ).event()
                )
        if started is None and last:  # nothing to say: an empty stream, still well-formed
            fmt = self.app.voice_format()
            await self.send(AudioStart(fmt.rate, fmt.width, fmt.channels).event())
            return fmt
        return started

    # -- intents ---------------------------------------------------------------------------

    def _transcript(self, text: str) -> Transcript:
        return Transcript(text=text, language=self.app.settings.language, engine="wyoming")

    async def _recognize_request(self, text: str) -> None:
        async with self._request_run("wyoming-recognize", Phase.THINKING) as run:
            intent = await run.recognize(self._transcript(text))
        if intent is None:
            await self.send(NotRecognized(text=self.app.settings.pipeline.not_understood).event())
            return
        await self.send(intent_event(intent, None))  # text is what to speak: nothing yet

    async def _on_transcript(self, text: str) -> None:
        """Home Assistant's conversation entity sends every sentence as ``transcript``: with
        ``handle`` offered voiced acts and answers; with ``intent`` alone, it only recognizes
        and replies ``intent`` (or ``not-recognized``) for Home Assistant to execute."""
        if "handle" not in self.service.services and "intent" in self.service.services:
            await self._recognize_request(text)
            return
        self._need("handle")
        await self._answer_transcript(text)

    async def _answer_transcript(self, text: str) -> None:
        """A transcript from Home Assistant: recognize -> handle -> answer, like a spoken one.

        What a voiced handler did itself is ``handled``; an intent Home Assistant executes
        goes back as ``intent`` with the words to speak (voiced_plugins.wyoming_server
        .conversation).
        """
        async with self._request_run("wyoming-transcript", Phase.THINKING) as run:
            run.context.data[PEER_EXECUTES] = True
            response = await run.answer(self._transcript(text))
        await self.send(transcript_reply(run.intent, response, response.speech))

    async def _handle_intent(self, wy_intent: WyIntent) -> None:
        intent = Intent(
            name=wy_intent.name,
            text=wy_intent.text or "",
            recognizer="wyoming",
            slots={e.name: e.value for e in wy_intent.entities},
        )
        async with self._request_run("wyoming-intent", Phase.THINKING) as run:
            response = await run.handle(intent)
        if not response.handler:
            await self.send(NotHandled(text=response.speech).event())
        else:
            await self.send(Handled(text=response.speech).event())

    # -- satellite -------------------------------------------------------------------------

    async def _start_satellite(self, name: str | None) -> None:
        self._need("satellite")
        if self.source is not None or self.closed or not self.app.accepting:
            return  # one site per connection; none once it (or the daemon) is stopping
        name = name or self.satellite_name
        if name:
            await self.service.take_over(self, name)
        self.site_id = self.service.attach(self, name)
        self.source = SatelliteSource(self.site_id)
        try:
            await self.app.attach_site(self.source, sinks=[self.service.sink_for(self.site_id)])
        except Exception as exc:
            log.exception("[%s] satellite site failed", self.site_id)
            self.app.emit(
                error_event("wyoming", f"satellite site failed: {exc}", None, self.site_id)
            )
            return
        log.info("[%s] satellite connected from %s", self.site_id, self.peer)

    async def _run_pipeline(self, request: RunPipeline) -> None:
        await self._start_satellite(None)
        if request.start_stage != PipelineStage.WAKE:  # woken on the satellite itself
            await self.app.listen(self.site_id)

    async def _stop_satellite(self, reason: str) -> None:
        source = self.source
        if source is None:
            return
        self.source = None
        source.close()
        await self.app.detach_site(self.site_id)
        self.service.detach(self)
        log.info("[%s] satellite %s", self.site_id, reason)

    async def _error(self, text: str, code: str) -> None:
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            await self.send(Error(text=text, code=code).event())


# what _dispatch does with each event type, tried in this order
_EVENT_HANDLERS: tuple[tuple[Any, Callable[[Session, WyEvent], Awaitable[None]]], ...] = (
    (WyomingChunk, Session._on_chunk),
    (AudioStart, Session._got_audio_start),
    (AudioStop, Session._got_audio_stop),
    (Describe, Session._got_describe),
    (Transcribe, Session._got_transcribe),
    (Detect, Session._got_detect),
    (Synthesize, Session._got_synthesize),
    (SynthesizeStart, Session._got_synthesize_start),
    (SynthesizeChunk, Session._got_synthesize_chunk),
    (SynthesizeStop, Session._got_synthesize_stop),
    (Recognize, Session._got_recognize),
    (WyTranscript, Session._got_transcript),
    (WyIntent, Session._got_intent),
    (RunSatellite, Session._got_run_satellite),
    (RunPipeline, Session._got_run_pipeline),
    (PauseSatellite, Session._got_pause_satellite),
    (WyInfo, Session._got_info),
    (Ping, Session._got_ping),
)
