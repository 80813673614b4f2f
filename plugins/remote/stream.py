"""One utterance streamed to a remote Wyoming ASR while it is spoken.

``transcribe`` + ``audio-start`` go out when speech starts, ``audio-chunk``s as the segmenter
passes speech, ``audio-stop`` at the VAD end; then the ``transcript`` is read. A thread of the
stream's own does the socket work, so ``feed`` (on the event loop) only queues. Whatever goes
wrong (down, reset, slow) makes ``finish`` raise, and the chain's next engine transcribes the
whole utterance.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Any

from wyoming.asr import Transcribe
from wyoming.asr import Transcript as WyTranscript
from wyoming.audio import AudioChunk, AudioStart, AudioStop

from voiced.api.audio import PIPELINE_FORMAT
from voiced.api.intents import Transcript

from .peer import Closed, RemoteError, RemoteUnavailable
from .reading import PeerProtocolError, Stalled

if TYPE_CHECKING:
    from .asr import RemoteWyomingAsr

log = logging.getLogger(__name__)

_STOP = b""  # end of the utterance (queued after the last chunk)


class RemoteAsrStream:
    def __init__(self, asr: RemoteWyomingAsr, language: str | None, longest: float) -> None:
        self.asr = asr
        self.language = language
        self.longest = longest  # seconds without more speech or an end: the stream gives up
        self._chunks: queue.SimpleQueue[bytes] = queue.SimpleQueue()
        self._aborted = threading.Event()
        self._done = threading.Event()
        self._answer: WyTranscript | None = None
        self._answer_data: dict[str, Any] = {}
        self._error: Exception | None = None
        self.stopped_at = 0.0  # when audio-stop went out
        self.sent = 0  # bytes of audio written to the service so far
        self._sent_before_last_feed = 0  # the last feed is the rest, at the VAD end
        self._thread = threading.Thread(
            target=self._run, name=f"asr-stream:{asr.name}", daemon=True
        )
        self._thread.start()

    # -- AsrStream --------------------------------------------------------------------------

    def feed(self, audio: bytes) -> None:
        if audio:
            self._sent_before_last_feed = self.sent
            self._chunks.put(audio)

    def finish(self, audio: bytes, language: str | None = None) -> Transcript:
        sent_early = self._sent_before_last_feed  # out while the person was still speaking
        self._chunks.put(_STOP)
        if not self._done.wait(self.asr.options.timeout + self.asr.options.connect_timeout):
            self.abort()
            raise RemoteUnavailable(
                f"{self.asr.peer.address} did not answer the stream within "
                f"{self.asr.options.timeout:g} s"
            )
        if self._error is not None:
            raise self._error
        assert self._answer is not None
        return self.asr.transcript(
            self._answer,
            self._answer_data,
            self.language,
            audio,
            self.stopped_at,
            streamed=True,
            sent_early_s=round(sent_early / PIPELINE_FORMAT.bytes_per_second, 3),
        )

    def abort(self) -> None:
        self._aborted.set()
        self._chunks.put(_STOP)

    # -- the stream's thread ----------------------------------------------------------------

    def _run(self) -> None:
        """The stream's thread: open, send the utterance as it comes, read the transcript;
        whatever goes wrong is kept for ``finish``."""
        peer, options = self.asr.peer, self.asr.options
        fmt = PIPELINE_FORMAT
        opening = [
            Transcribe(name=options.model, language=self.language).event(),
            AudioStart(fmt.rate, fmt.width, fmt.channels).event(),
        ]
        conn: Any = None
        try:
            conn, kept = peer.connect()
            try:
                peer.write(conn, opening, options.timeout)
            except (OSError, ValueError):
                if not kept:
                    raise
                peer.discard(conn)  # a kept connection the service dropped meanwhile: redial
                conn, _ = peer.connect()
                peer.write(conn, opening, options.timeout)
            if not self._send_audio(conn):
                return
            if self._aborted.is_set():
                peer.discard(conn)  # the service forgets an utterance whose connection went away
                return
            peer.write(conn, [AudioStop().event()], options.timeout)
            self.stopped_at = time.monotonic()
            answer = peer.read_until(conn, lambda e: WyTranscript.is_type(e.type), options.timeout)
            self._answer = WyTranscript.from_event(answer[-1])
            self._answer_data = answer[-1].data or {}
            peer.release(conn)
        except Exception as exc:  # never leave finish() waiting
            self._keep_failure(exc, conn)
        finally:
            self._done.set()

    def _send_audio(self, conn: Any) -> bool:
        """Send the queued speech as audio chunks until the end; False when nothing more came
        for ``longest`` seconds (the connection is given back, the error kept)."""
        peer, options = self.asr.peer, self.asr.options
        fmt = PIPELINE_FORMAT
        step = options.samples_per_chunk * fmt.width
        while True:
            try:
                audio = self._chunks.get(timeout=self.longest)
            except queue.Empty:  # neither more speech nor an end: give the connection back
                peer.discard(conn)
                self._error = RemoteError(f"the stream got nothing for {self.longest:g} s")
                return False
            if not audio:  # _STOP
                return True
            chunks = (
                AudioChunk(fmt.rate, fmt.width, fmt.channels, audio[i : i + step]).event()
                for i in range(0, len(audio), step)
            )
            peer.write(conn, chunks, options.timeout)
            self.sent += len(audio)

    def _keep_failure(self, exc: Exception, conn: Any) -> None:
        """Keep what went wrong for ``finish``, and drop or report the connection by kind."""
        peer, options = self.asr.peer, self.asr.options
        if isinstance(exc, RemoteUnavailable):  # down: connect refused, fast-fail while resting
            self._error = exc
        elif isinstance(exc, (Stalled, PeerProtocolError)):  # misbehaved: the service rests
            stalled = f"{peer.address} sent an event not complete within {options.timeout:g} s"
            self._error = peer.broken(conn, stalled if isinstance(exc, Stalled) else str(exc))
        elif isinstance(exc, TimeoutError):
            self._error = RemoteUnavailable(
                f"{peer.address} did not answer the stream within {options.timeout:g} s"
            )
            if conn is not None:
                peer.discard(conn)
        elif isinstance(exc, (Closed, OSError, ValueError)):
            reason = f"{peer.address} closed the stream ({exc})"
            self._error = peer.broken(conn, reason) if conn is not None else RemoteError(reason)
        else:  # the service's own error event (RemoteError), or anything else
            self._error = exc
            if conn is not None:
                peer.discard(conn)
