"""A sink that mixes: media playing in the background of a site, with the site's answers,
announcements and rings mixed over it while the media is lowered (ducking).

A sink plays one stream at a time. A ``Mixer`` wraps one: with no media playing, ``play``
goes straight to the sink; while media plays (``play_background``), the media's stream is
the sink's stream and every other ``play`` is mixed into it, at the media's format."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np

from voiced.audio import PIPELINE_FORMAT, AudioChunk, StreamConverter, float_to_pcm16, pcm_to_float
from voiced.stages import Sink

AHEAD_SECONDS = 2.0  # audio a mixed-in stream may hold ahead of the mix (bounds its memory)
RAMP_SECONDS = 0.05  # a change of the media's gain is a ramp this long (no click)
SLICE_SECONDS = 0.25  # the most a mixed-in stream adds to the output at once with no media


class _Voice:
    """One stream mixed over the media: its samples not yet mixed, at the media's format."""

    def __init__(self) -> None:
        self.converter: StreamConverter | None = None
        self.pending = np.zeros(0, dtype=np.float32)
        self.ended = False  # its stream gave its last chunk
        self.taken = asyncio.Event()  # the mix took samples, or the media stopped

    def push(self, chunk: AudioChunk) -> None:
        if self.converter is None:
            self.converter = StreamConverter(chunk.format, PIPELINE_FORMAT)
        self._add(self.converter.convert(chunk.audio))

    def end(self) -> None:
        """Its stream gave its last chunk: what the resampler still holds is added."""
        if self.converter is not None:
            self._add(self.converter.convert(b"", last=True))
        self.ended = True

    def _add(self, pcm: bytes) -> None:
        samples = pcm_to_float(pcm, PIPELINE_FORMAT)[:, 0]
        self.pending = np.concatenate([self.pending, samples])

    def take(self, count: int) -> np.ndarray:
        taken, self.pending = self.pending[:count], self.pending[count:]
        self.taken.set()
        return taken

    async def wait_taken(self) -> None:
        """Until the mix takes samples (or the media stops)."""
        self.taken.clear()
        await self.taken.wait()

    @property
    def finished(self) -> bool:
        return self.ended and not self.pending.size


class _Bed:
    """The media playing on a sink: its gain now, whether it is paused, the streams over it."""

    def __init__(self, gain: Callable[[], float]) -> None:
        self.gain = gain
        self.paused = False
        self.closed = False  # the media's own audio ended: new streams play on their own
        self.stopped = False  # the sink's stream ended: streams still here play on their own
        self.voices: list[_Voice] = []
        self.changed = asyncio.Event()  # a voice came, had audio or left; pause changed
        self._last_gain: float | None = None  # none yet: the media starts at its gain

    def mix(self, media: np.ndarray) -> np.ndarray:
        """``media`` at the gain (ramped from the last one, no click) plus the voices."""
        gain = max(0.0, min(1.0, float(self.gain())))
        last = gain if self._last_gain is None else self._last_gain
        gains = np.full(media.size, gain, dtype=np.float32)
        ramp = min(media.size, int(PIPELINE_FORMAT.rate * RAMP_SECONDS))
        gains[:ramp] = np.linspace(last, gain, ramp, dtype=np.float32)
        out = media * gains
        self._last_gain = gain
        for voice in self.voices:
            taken = voice.take(media.size)
            out[: taken.size] += taken
        return out

    def voices_only(self) -> np.ndarray | None:
        """The voices' next samples with no media under them (paused, or the media ended);
        None when no voice has any yet."""
        ready = max((v.pending.size for v in self.voices), default=0)
        if not ready:
            return None
        return self.mix(np.zeros(min(ready, int(PIPELINE_FORMAT.rate * SLICE_SECONDS)), "f4"))

    async def wait(self) -> None:
        self.changed.clear()
        await self.changed.wait()

    def stop(self) -> None:
        self.closed = self.stopped = True
        for voice in self.voices:
            voice.taken.set()


class Mixer:
    """One sink, shared by the media playing in the background and the site's other audio."""

    def __init__(self, inner: Sink) -> None:
        self.inner = inner
        self.bed: _Bed | None = None

    def __getattr__(self, name: str) -> Any:  # the sink's own attributes (its name, ...)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def play(self, audio: AsyncIterator[AudioChunk], run_id: str, site_id: str) -> None:
        """Play ``audio``: over the media when media plays here, else on the sink."""
        bed = self.bed
        if bed is None or bed.closed:
            await self.inner.play(audio, run_id, site_id)
            return
        await self._mix_in(bed, audio, run_id, site_id)

    async def play_background(
        self,
        audio: AsyncIterator[AudioChunk],
        run_id: str,
        site_id: str,
        gain: Callable[[], float],
    ) -> None:
        """Play media at ``gain()`` (asked for each chunk), other streams mixed over it."""
        if self.bed is not None:
            raise RuntimeError("media is already playing on this sink")
        bed = self.bed = _Bed(gain)
        try:
            await self.inner.play(self._mixed(bed, audio), run_id, site_id)
        finally:
            bed.stop()
            if self.bed is bed:
                self.bed = None

    def pause(self, paused: bool) -> bool:
        """Pause or resume the media playing here (streams over it still play); False when
        none plays."""
        if self.bed is None or self.bed.closed:
            return False
        self.bed.paused = paused
        self.bed.changed.set()
        return True

    async def _mixed(
        self, bed: _Bed, audio: AsyncIterator[AudioChunk]
    ) -> AsyncIterator[AudioChunk]:
        converter: StreamConverter | None = None
        async for chunk in audio:
            while bed.paused:
                if (voices := await _voices_or_wait(bed)) is not None:
                    yield voices
            converter = converter or StreamConverter(chunk.format, PIPELINE_FORMAT)
            media = pcm_to_float(converter.convert(chunk.audio), PIPELINE_FORMAT)[:, 0]
            yield _chunk(bed.mix(media))
        bed.closed = True
        while any(not v.finished for v in bed.voices):
            if (voices := await _voices_or_wait(bed)) is not None:
                yield voices

    async def _mix_in(
        self, bed: _Bed, audio: AsyncIterator[AudioChunk], run_id: str, site_id: str
    ) -> None:
        voice = _Voice()
        bed.voices.append(voice)
        try:
            async for chunk in audio:
                voice.push(chunk)
                bed.changed.set()
                while voice.pending.size > PIPELINE_FORMAT.rate * AHEAD_SECONDS:
                    if bed.stopped:
                        break
                    await voice.wait_taken()
                if bed.stopped:
                    break
            else:
                voice.end()
                bed.changed.set()
                while not voice.finished and not bed.stopped:
                    await voice.wait_taken()
        finally:
            bed.voices.remove(voice)
            bed.changed.set()
        if bed.stopped and not voice.finished:  # the media stopped first: the rest on its own
            await self.inner.play(_rest(voice, audio), run_id, site_id)


async def _voices_or_wait(bed: _Bed) -> AudioChunk | None:
    """The voices' next samples with no media under them; None after waiting for a change
    (a voice's audio, a voice leaving, a resume) when no voice has any."""
    samples = bed.voices_only()
    if samples is None:
        await bed.wait()
        return None
    return _chunk(samples)


def _chunk(samples: np.ndarray) -> AudioChunk:
    return AudioChunk(float_to_pcm16(np.clip(samples, -1.0, 1.0)), PIPELINE_FORMAT)


async def _rest(voice: _Voice, audio: AsyncIterator[AudioChunk]) -> AsyncIterator[AudioChunk]:
    if voice.pending.size:
        yield _chunk(voice.pending)
    if not voice.ended:
        async for chunk in audio:
            yield chunk
