"""Files and pipes: a sound-file source, raw PCM on stdin, and a WAV sink for answers."""

from __future__ import annotations

import asyncio
import sys
import time
import wave
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from voiced.api.audio import (
    PIPELINE_FORMAT,
    AudioChunk,
    AudioFormat,
    AudioFormatError,
    StreamConverter,
)
from voiced.api.hooks import hookimpl


def bundled_sample() -> Path:
    """The sample command WAV shipped with voiced (two spoken commands)."""
    from importlib.resources import files

    return Path(str(files("voiced").joinpath("data/sample.wav")))


class FileSourceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(
        "bundled:sample", description="a sound file (WAV, FLAC, OGG) or bundled:sample"
    )
    realtime: bool = Field(False, description="feed at the pace of speech, as a microphone would")
    loop: bool = False
    chunk_ms: int = Field(20, ge=5, le=1000)
    site_id: str | None = None
    hears_playback: bool = Field(
        False, description="act like a microphone beside the speaker: ignore audio while speaking"
    )


class FileSource:
    """Reads any sound file and converts it once, at the edge, to 16 kHz mono 16-bit."""

    def __init__(self, options: FileSourceOptions, app: Any = None) -> None:
        self.options = options
        self.site_id = options.site_id or (app.settings.site_id if app else "default")
        self.finite = not options.loop
        self.hears_playback = options.hears_playback
        self.path = bundled_sample() if options.path == "bundled:sample" else Path(options.path)

    def load(self) -> None:
        if not self.path.is_file():
            raise AudioFormatError(f"{self.path}: no such file")

    def close(self) -> None:
        pass

    async def chunks(self) -> AsyncIterator[AudioChunk]:
        chunk_bytes = PIPELINE_FORMAT.bytes_per_second * self.options.chunk_ms // 1000
        started = time.monotonic()
        sent = 0.0
        while True:
            async for pcm in self._converted_blocks():
                for offset in range(0, len(pcm), chunk_bytes):
                    chunk = AudioChunk(pcm[offset : offset + chunk_bytes])
                    if self.options.realtime:
                        sent += chunk.seconds
                        await asyncio.sleep(max(0.0, started + sent - time.monotonic()))
                    yield chunk
            if not self.options.loop:
                return

    async def _converted_blocks(self) -> AsyncIterator[bytes]:
        import soundfile

        try:
            sound = await asyncio.to_thread(soundfile.SoundFile, str(self.path))
        except (soundfile.LibsndfileError, RuntimeError, TypeError) as exc:
            raise AudioFormatError(f"{self.path}: not a readable audio file ({exc})") from None
        with sound:
            if sound.frames == 0:
                raise AudioFormatError(f"{self.path}: the file holds no audio frames")
            converter = StreamConverter(AudioFormat(sound.samplerate, 2, sound.channels))
            block = max(1, sound.samplerate // 2)
            while True:
                try:
                    data = await asyncio.to_thread(sound.read, block, "float32", True)
                except (soundfile.LibsndfileError, RuntimeError) as exc:
                    raise AudioFormatError(f"{self.path}: truncated or corrupt ({exc})") from None
                last = len(data) < block
                yield converter.convert_float(data, last=last)
                if last:
                    return


class StdinSourceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rate: int = Field(16000, ge=1000, le=384000)
    width: int = Field(2, ge=1, le=4, description="bytes per sample")
    channels: int = Field(1, ge=1, le=32)
    chunk_ms: int = Field(20, ge=5, le=1000)
    site_id: str | None = None


class StdinSource:
    """Raw little-endian PCM on standard input (e.g. ``arecord -f S16_LE | voiced run``)."""

    finite = True
    hears_playback = False

    def __init__(self, options: StdinSourceOptions, app: Any = None, stream: Any = None) -> None:
        self.options = options
        self.site_id = options.site_id or (app.settings.site_id if app else "default")
        self.format = AudioFormat(options.rate, options.width, options.channels)
        self.stream = stream

    def load(self) -> None:
        pass

    def close(self) -> None:
        pass

    async def chunks(self) -> AsyncIterator[AudioChunk]:
        stream = self.stream or sys.stdin.buffer
        frame = self.format.width * self.format.channels
        size = max(
            frame, self.format.bytes_per_second * self.options.chunk_ms // 1000 // frame * frame
        )
        converter = StreamConverter(self.format)
        pending = b""
        while True:
            data = await asyncio.to_thread(stream.read, size)
            if not data:
                if tail := converter.convert(b"", last=True):
                    yield AudioChunk(tail)
                return
            data = pending + data
            usable = len(data) - len(data) % frame
            pending = data[usable:]
            if usable:
                yield AudioChunk(converter.convert(data[:usable]))


class WavSinkOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field("answers", description="a folder, or a file name template")
    rate: int | None = Field(None, description="resample to this rate; default: the voice's")
    realtime: bool = Field(
        False, description="write at playback speed, so speaking lasts as long as the audio"
    )


class WavSink:
    """Writes each spoken answer to a WAV file as it streams in (an answers folder by default).

    ``path`` is a folder (one file per answer), a ``.wav`` file (the latest answer), or a
    template with {site_id}, {run_id} and {time}.
    """

    def __init__(self, options: WavSinkOptions, app: Any = None) -> None:
        self.options = options
        self.written: list[Path] = []

    def load(self) -> None:
        pass

    def close(self) -> None:
        pass

    def target(self, run_id: str, site_id: str) -> Path:
        template = self.options.path
        if "{" not in template and not template.lower().endswith(".wav"):
            template = str(Path(template) / "{site_id}-{time}-{run_id}.wav")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = Path(template.format(site_id=site_id, run_id=run_id[:8], time=stamp))
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    async def play(self, audio: AsyncIterator[AudioChunk], run_id: str, site_id: str) -> None:
        wav: wave.Wave_write | None = None
        converter: StreamConverter | None = None
        started = played = 0.0
        try:
            async for chunk in audio:
                if wav is None:
                    started = time.monotonic()
                    rate = self.options.rate or chunk.format.rate
                    target = AudioFormat(rate, 2, 1)
                    converter = StreamConverter(chunk.format, target)
                    path = self.target(run_id, site_id)
                    wav = wave.open(str(path), "wb")  # noqa: SIM115 (open across chunks)
                    wav.setnchannels(1)
                    wav.setsampwidth(2)
                    wav.setframerate(rate)
                    self.written.append(path)
                for piece in _slices(chunk, self.options.realtime):
                    if self.options.realtime:  # like a loudspeaker: a cancel stops it mid-answer
                        await asyncio.sleep(max(0.0, started + played - time.monotonic()))
                        played += len(piece) / chunk.format.bytes_per_second
                    wav.writeframes(converter.convert(piece))
            if wav is not None and converter is not None:
                wav.writeframes(converter.convert(b"", last=True))
        finally:
            if wav is not None:
                wav.close()


def _slices(chunk: AudioChunk, realtime: bool) -> list[bytes]:
    """20 ms pieces when pacing at playback speed, else the whole chunk."""
    if not realtime:
        return [chunk.audio]
    frame = chunk.format.width * chunk.format.channels
    step = max(frame, chunk.format.bytes_per_second // 50 // frame * frame)
    return [chunk.audio[i : i + step] for i in range(0, len(chunk.audio), step)]


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "source",
        "file",
        FileSource,
        options=FileSourceOptions,
        shorthand="path",
        description="a sound file (any rate/width/channels), converted once",
    )
    register(
        "source",
        "stdin",
        StdinSource,
        options=StdinSourceOptions,
        shorthand="rate",
        description="raw PCM on standard input",
    )
    register(
        "sink",
        "wav",
        WavSink,
        options=WavSinkOptions,
        shorthand="path",
        description="write each answer to a WAV file",
    )
