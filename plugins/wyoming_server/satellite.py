"""A satellite connection as a pipeline site: its audio in (a source), its answers out (a sink)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from wyoming.audio import AudioChunk as WyomingChunk
from wyoming.audio import AudioStart, AudioStop

from voiced.api.audio import AudioChunk, AudioFormat, StreamConverter

if TYPE_CHECKING:
    from voiced_plugins.wyoming_server.session import Session

log = logging.getLogger(__name__)

QUEUE_CHUNKS = 256  # ~16 s of 64 ms chunks: a stalled site drops old audio, not memory


class SatelliteSource:
    """Audio a satellite streams, converted at the edge; ends when the satellite goes away."""

    finite = False
    stage_name = "wyoming-satellite"

    def __init__(self, site_id: str) -> None:
        self.site_id = site_id
        self.dropped = 0
        self._queue: asyncio.Queue[AudioChunk | None] = asyncio.Queue(QUEUE_CHUNKS)
        self._converter: StreamConverter | None = None
        self._closed = False

    def load(self) -> None:
        """Nothing to load: the audio arrives over the connection."""

    def close(self) -> None:
        """End the stream (the satellite disconnected or paused)."""
        if self._closed:
            return
        self._closed = True
        self._put(None)

    def feed(self, pcm: bytes, fmt: AudioFormat) -> None:
        """One chunk as the satellite sent it; converted once to 16 kHz mono 16-bit."""
        if self._closed or not pcm:
            return
        if self._converter is None or self._converter.format != fmt:
            self._converter = StreamConverter(fmt)
        audio = self._converter.convert(pcm)
        if audio:
            self._put(AudioChunk(audio))

    def _put(self, item: AudioChunk | None) -> None:
        if self._queue.full():
            self._queue.get_nowait()
            self.dropped += 1
            if self.dropped in (1, 10, 100) or self.dropped % 1000 == 0:
                log.warning(
                    "[%s] pipeline behind the satellite: dropped %d old chunks",
                    self.site_id,
                    self.dropped,
                )
        self._queue.put_nowait(item)

    async def chunks(self) -> AsyncIterator[AudioChunk]:
        while (chunk := await self._queue.get()) is not None:
            yield chunk


class SatelliteSink:
    """Streams answers to whichever connection currently serves this site.

    One per site id, so a satellite that reconnects gets the answers of its site again. With no
    connection (or one that breaks mid-answer) the audio is dropped quietly: the run ends.
    """

    stage_name = "wyoming-satellite"

    def __init__(self, site_id: str, samples_per_chunk: int = 1024) -> None:
        self.site_id = site_id
        self.samples_per_chunk = samples_per_chunk
        self.session: Session | None = None

    def load(self) -> None:
        """Nothing to load."""

    def close(self) -> None:
        self.session = None

    async def play(self, audio: AsyncIterator[AudioChunk], run_id: str, site_id: str) -> None:
        session = self.session
        if session is None or session.closed:
            log.info("[%s] run %s: no satellite connected; answer not played", site_id, run_id[:8])
            return
        fmt: AudioFormat | None = None
        try:
            async for chunk in audio:
                if fmt is None:
                    fmt = chunk.format
                    await session.send(AudioStart(fmt.rate, fmt.width, fmt.channels).event())
                await self._send_chunk(session, chunk)
            if fmt is not None:
                await session.send(AudioStop().event())
        except asyncio.CancelledError:  # barge-in: tell the satellite the answer ended
            if fmt is not None and not session.closed:
                session.send_soon(AudioStop().event())
            raise
        except (ConnectionError, OSError, RuntimeError) as exc:
            log.info(
                "[%s] run %s: satellite went away while speaking (%s)", site_id, run_id[:8], exc
            )

    async def _send_chunk(self, session: Session, chunk: AudioChunk) -> None:
        fmt = chunk.format
        step = self.samples_per_chunk * fmt.width * fmt.channels
        for start in range(0, len(chunk.audio), step):
            piece = chunk.audio[start : start + step]
            await session.send(WyomingChunk(fmt.rate, fmt.width, fmt.channels, piece).event())


def peer_name(writer: Any) -> str:
    peer = writer.get_extra_info("peername")
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}-{peer[1]}"
    return "local"
