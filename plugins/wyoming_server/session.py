"""One Wyoming connection: requests from Home Assistant, or a satellite streaming its room."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any

from voiced_plugins.wyoming_server.conversation import PEER_EXECUTES, intent_event, transcript_reply
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

from voiced.audio import AudioChunk, AudioFormat, AudioFormatError, StreamConverter
from voiced.context import new_run_id
from voiced.events import Event, EventType, error_event
from voiced.intents import Intent, Response, Transcript
from voiced.sentences import split_sentences

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
    ) -> None:
        super().__init__(reader, writer)
        self.service = service
        self.app = service.app
        self.peer = peer_name(writer)
        self.site_id = site_id or f"wyoming-{self.peer.rsplit('-', 1)[0]}"
        self.closed = False
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
        self._stream_text: str | None = None  # synthesize-start .. -stop
        self._stream_started: AudioFormat | None = None
        # satellite state
        self.satellite_name: str | None = None
        self.source: SatelliteSource | None = None
        self._site_task: asyncio.Task[None] | None = None

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
        """Serve until the peer leaves; a peer that vanishes (reset, timeout) is no error."""
        try:
            await super().run()
        except (ConnectionError, OSError, TimeoutError) as exc:
            log.info("[%s] wyoming peer %s went away: %s", self.site_id, self.peer, exc)

    async def handle_event(self, event: WyEvent) -> bool:
        try:
            await self._dispatch(event)
        except RequestError as exc:
            log.warning("[%s] wyoming %s: %s", self.site_id, event.type, exc)
            await self._error(str(exc), exc.code)
        except (ConnectionError, OSError):
            return False
        except Exception as exc:  # a bad request must not take the server down
            log.exception("[%s] wyoming %s failed", self.site_id, event.type)
            await self._error(f"{type(exc).__name__}: {exc}", event.type)
        return not self.closed

    async def _dispatch(self, event: WyEvent) -> None:
        kind = event.type
        if WyomingChunk.is_type(kind):
            await self._on_chunk(event)
        elif AudioStart.is_type(kind):
            self._on_audio_start(event)
        elif AudioStop.is_type(kind):
            await self._on_audio_stop()
        elif Describe.is_type(kind):
            await self.send(self.service.info().event())
        elif Transcribe.is_type(kind):
            self._need("asr")
            request = Transcribe.from_event(event)
            self._begin("transcribe")
            self._language = request.language
        elif Detect.is_type(kind):
            self._need("wake")
            names = Detect.from_event(event).names
            await self._load_wakes(names)
            self._begin("detect")
        elif Synthesize.is_type(kind):
            if self._stream_text is None:  # while streaming, this is the compatibility copy
                self._need("tts")
                await self._synthesize(Synthesize.from_event(event).text)
        elif SynthesizeStart.is_type(kind):
            self._need("tts")
            self._stream_text, self._stream_started = "", None
        elif SynthesizeChunk.is_type(kind):
            await self._synthesize_chunk(SynthesizeChunk.from_event(event).text)
        elif SynthesizeStop.is_type(kind):
            await self._synthesize_stop()
        elif Recognize.is_type(kind):
            self._need("intent")
            await self._recognize_request(Recognize.from_event(event).text)
        elif WyTranscript.is_type(kind):
            self._need("handle")
            await self._handle_text(WyTranscript.from_event(event).text)
        elif WyIntent.is_type(kind):
            self._need("handle")
            await self._handle_intent(WyIntent.from_event(event))
        elif RunSatellite.is_type(kind):
            await self._start_satellite(event.data.get("site_id") or event.data.get("name"))
        elif RunPipeline.is_type(kind):
            await self._run_pipeline(RunPipeline.from_event(event))
        elif PauseSatellite.is_type(kind):
            await self._stop_satellite("paused")
        elif WyInfo.is_type(kind):
            satellite = event.data.get("satellite") or {}
            self.satellite_name = satellite.get("area") or satellite.get("name")
        elif Ping.is_type(kind):
            await self.send(Pong(text=Ping.from_event(event).text).event())
        else:
            log.debug("[%s] wyoming: ignoring %s", self.site_id, kind)

    async def disconnect(self) -> None:
        """The peer went away: end its site's stream; runs in flight end quietly."""
        self.closed = True
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
        self._request = request
        self._audio.clear()
        self._converter = None
        self._detected = False
        for wake in self._wakes or []:
            wake.reset()

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
            if self.source is not None and getattr(self.app, "accepting", True):
                self.source.feed(chunk.audio, fmt)  # not while the daemon shuts down
            return
        if self._converter is None or self._converter.format != fmt:
            self._converter = StreamConverter(fmt)
        pcm = self._converter.convert(chunk.audio)
        if self._request == "transcribe":
            if len(self._audio) + len(pcm) > MAX_REQUEST_SECONDS * 32000:
                self._request = None
                raise RequestError(
                    f"transcribe: more than {MAX_REQUEST_SECONDS:g} s of audio", "too-long"
                )
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
            await self.send(NotDetected().event())

    async def _transcribe(self, pcm: bytes, language: str | None) -> None:
        app, run = self.app, new_run_id()
        ended = time.monotonic()
        engine, transcript = await asyncio.to_thread(
            app.asr.call, "transcribe", pcm, language, run_id=run, site_id=self.site_id
        )
        now = time.monotonic()
        text = "" if transcript.no_speech else transcript.text.strip()
        await self.send(WyTranscript(text=text, language=transcript.language).event())
        seconds = len(pcm) / 32000
        app.emit(
            Event(
                EventType.TRANSCRIPT,
                run,
                self.site_id,
                {
                    "text": text,
                    "engine": engine,
                    "language": transcript.language,
                    "audio_seconds": round(seconds, 3),
                    "latency_s": round(now - ended, 4),
                    "asr_seconds": round(now - ended, 4),
                    "rtf": round((now - ended) / seconds, 4) if seconds else None,
                    "no_speech": transcript.no_speech,
                    "via": "wyoming",
                },
            )
        )

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
            detection = await asyncio.to_thread(wake.process, chunk)
            if detection is None:
                continue
            if self._wake_names and detection.name not in self._wake_names:
                continue
            self._detected = True
            for other in self._wakes or []:
                other.reset()
            await self.send(Detection(name=detection.name, timestamp=timestamp).event())
            self.app.emit(
                Event(
                    EventType.WAKE,
                    None,
                    self.site_id,
                    {
                        "name": detection.name,
                        "score": round(float(detection.score), 4),
                        "via": "wyoming",
                        **detection.data,
                    },
                )
            )
            return

    # -- speech synthesis --------------------------------------------------------------------

    async def _synthesize(self, text: str) -> None:
        started = await self._speak_sentences(split_sentences(text), None)
        await self.send(AudioStop().event())
        if started is None:
            log.info("[%s] synthesize: nothing to say in %r", self.site_id, text)

    async def _synthesize_chunk(self, text: str) -> None:
        if self._stream_text is None:
            raise RequestError("synthesize-chunk without synthesize-start", "synthesize")
        self._stream_text += text
        sentences = split_sentences(self._stream_text)
        if len(sentences) > 1:  # the last one may still grow
            done, rest = sentences[:-1], sentences[-1]
            self._stream_started = await self._speak_sentences(done, self._stream_started)
            self._stream_text = rest

    async def _synthesize_stop(self) -> None:
        if self._stream_text is None:
            raise RequestError("synthesize-stop without synthesize-start", "synthesize")
        rest, self._stream_text = self._stream_text, None
        await self._speak_sentences(split_sentences(rest), self._stream_started)
        self._stream_started = None
        await self.send(AudioStop().event())
        await self.send(SynthesizeStopped().event())

    async def _speak_sentences(
        self, sentences: list[str], started: AudioFormat | None
    ) -> AudioFormat | None:
        """Synthesize sentence by sentence, streaming each as soon as it's made."""
        app, run = self.app, new_run_id()
        samples = self.service.options.samples_per_chunk
        if not sentences and started is None:
            fmt = getattr(app.tts.active[1], "format", None) or AudioFormat(22050, 2, 1)
            await self.send(AudioStart(fmt.rate, fmt.width, fmt.channels).event())
            return fmt
        for sentence in sentences:
            t0 = time.monotonic()
            engine, chunk = await asyncio.to_thread(
                app.tts.call, "synthesize", sentence, run_id=run, site_id=self.site_id
            )
            fmt = chunk.format
            if started is None:
                started = fmt
                await self.send(AudioStart(fmt.rate, fmt.width, fmt.channels).event())
                app.emit(
                    Event(
                        EventType.TTS_AUDIO,
                        run,
                        self.site_id,
                        {
                            "engine": engine,
                            "sentence": 1,
                            "via": "wyoming",
                            "time_to_first_audio_s": round(time.monotonic() - t0, 4),
                            "rate": fmt.rate,
                        },
                    )
                )
            step = samples * fmt.width * fmt.channels
            for offset in range(0, len(chunk.audio), step):
                await self.send(
                    WyomingChunk(
                        fmt.rate, fmt.width, fmt.channels, chunk.audio[offset : offset + step]
                    ).event()
                )
        return started

    # -- intents ---------------------------------------------------------------------------

    async def _recognize(self, text: str) -> tuple[Intent | None, Any]:
        app = self.app
        context = app.new_context(self.site_id)
        transcript = Transcript(text=text, language=app.settings.language, engine="wyoming")
        intent = await asyncio.to_thread(
            app.pm.hook.voiced_recognize, transcript=transcript, context=context
        )
        if intent is None:
            app.emit(
                Event(
                    EventType.INTENT_NOT_RECOGNIZED,
                    context.run_id,
                    self.site_id,
                    {
                        "text": text,
                        "via": "wyoming",
                        "reasons": context.data.get("intent_errors", []),
                    },
                )
            )
        else:
            app.emit(
                Event(
                    EventType.INTENT,
                    context.run_id,
                    self.site_id,
                    {**intent.to_dict(), "via": "wyoming"},
                )
            )
        return intent, context

    async def _recognize_request(self, text: str) -> None:
        intent, _ = await self._recognize(text)
        if intent is None:
            await self.send(NotRecognized(text=self.app.settings.pipeline.not_understood).event())
            return
        await self.send(intent_event(intent, None))  # text is what to speak: nothing yet

    async def _handle(self, intent: Intent, context: Any) -> Response | None:
        app = self.app
        started = time.monotonic()
        response = await asyncio.to_thread(
            app.pm.hook.voiced_handle, intent=intent, context=context
        )
        if response is not None:
            app.emit(
                Event(
                    EventType.HANDLED,
                    context.run_id,
                    self.site_id,
                    {
                        **response.to_dict(),
                        "seconds": round(time.monotonic() - started, 4),
                        "via": "wyoming",
                    },
                )
            )
        return response

    async def _handle_text(self, text: str) -> None:
        intent, context = await self._recognize(text)
        context.data[PEER_EXECUTES] = True
        response = await self._handle(intent, context) if intent is not None else None
        not_understood = self.app.settings.pipeline.not_understood
        await self.send(transcript_reply(intent, response, not_understood))

    async def _handle_intent(self, wy_intent: WyIntent) -> None:
        intent = Intent(
            name=wy_intent.name,
            text=wy_intent.text or "",
            recognizer="wyoming",
            slots={e.name: e.value for e in wy_intent.entities},
        )
        context = self.app.new_context(self.site_id)
        response = await self._handle(intent, context)
        if response is None:
            await self.send(NotHandled(text="Sorry, I can't do that yet.").event())
        else:
            await self.send(Handled(text=response.speech).event())

    # -- satellite -------------------------------------------------------------------------

    async def _start_satellite(self, name: str | None) -> None:
        self._need("satellite")
        if self.source is not None:
            return
        self.site_id = self.service.attach(self, name or self.satellite_name)
        self.source = SatelliteSource(self.site_id)
        self._site_task = asyncio.create_task(
            self._run_site(self.source), name=f"wyoming-site:{self.site_id}"
        )
        log.info("[%s] satellite connected from %s", self.site_id, self.peer)

    async def _run_site(self, source: SatelliteSource) -> None:
        sink = self.service.sink_for(self.site_id)
        try:
            await self.app.run_site(source, sinks=[sink])
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("[%s] satellite site failed", self.site_id)
            self.app.emit(
                error_event("wyoming", f"satellite site failed: {exc}", None, self.site_id)
            )

    async def _run_pipeline(self, request: RunPipeline) -> None:
        await self._start_satellite(None)
        if request.start_stage != PipelineStage.WAKE:  # woken on the satellite itself
            await self._until_site_exists()
            await self.app.listen(self.site_id)

    async def _until_site_exists(self) -> None:
        for _ in range(200):
            if self.site_id in self.app.sites:
                return
            await asyncio.sleep(0.01)

    async def _stop_satellite(self, reason: str) -> None:
        source, task = self.source, self._site_task
        if source is None:
            return
        self.source, self._site_task = None, None
        source.close()
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), 10)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
        self.service.detach(self)
        log.info("[%s] satellite %s", self.site_id, reason)

    async def _error(self, text: str, code: str) -> None:
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            await self.send(Error(text=text, code=code).event())
