"""Files and pipes: a sound-file source, raw PCM on stdin, and a WAV sink for answers."""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import re
import sys
import threading
import time
import wave
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from voiced.api.audio import (
    PIPELINE_FORMAT,
    AudioChunk,
    AudioFormat,
    AudioFormatError,
    StreamConverter,
)
from voiced.api.hooks import hookimpl

log = logging.getLogger(__name__)


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
        self.live = options.realtime  # read as fast as it goes, a file waits for the pipeline
        self.path = bundled_sample() if options.path == "bundled:sample" else Path(options.path)

    def load(self) -> None:
        if not self.path.is_file():
            raise AudioFormatError(f"{self.path}: no such file")
        try:
            with self.path.open("rb"):
                pass
        except OSError as exc:
            raise AudioFormatError(f"{self.path}: cannot read it: {exc.strerror}") from None

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
    live = False  # a pipe waits: a full pipeline holds the writer back

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
        reader = BlockingReader(stream)
        pending = b""
        while True:
            data = await reader.read(size)
            if not data:
                if tail := converter.convert(b"", last=True):
                    yield AudioChunk(tail)
                return
            data = pending + data
            usable = len(data) - len(data) % frame
            pending = data[usable:]
            if usable:
                yield AudioChunk(converter.convert(data[:usable]))


TEMPLATE_FIELDS = ("site_id", "run_id", "time")
UNDERRUN_SECONDS = 0.25  # a realtime sink behind by more waited for its audio: it goes on from now
_FIELD = re.compile(r"\{[^{}]*\}")


class BlockingReader:
    """Reads a blocking stream on a daemon thread of its own, one block at a time.

    ``asyncio.to_thread`` would park the read in the loop's executor, and a quiet pipe then
    holds up shutdown forever: the executor joins its threads at exit. A daemon thread blocked
    in ``read`` does not keep the process alive. One read is asked for at a time, so a slow
    pipeline still holds the writer back.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        try:  # a real pipe or file: read the descriptor, so no buffer lock is held at exit
            self._fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):
            self._fd = None
        self._asks: queue.SimpleQueue[tuple[int, asyncio.AbstractEventLoop, asyncio.Future]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None

    async def read(self, size: int) -> bytes:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[bytes] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="voiced-stdin", daemon=True)
            self._thread.start()
        self._asks.put((size, loop, future))
        return await future

    def _serve(self) -> None:
        while True:
            size, loop, future = self._asks.get()
            try:
                data = os.read(self._fd, size) if self._fd is not None else self.stream.read(size)
                error = None
            except Exception as exc:  # handed to the reader on the loop
                data, error = b"", exc
            if loop.is_closed():
                return
            loop.call_soon_threadsafe(_settle, future, data, error)


def _settle(future: asyncio.Future, data: bytes, error: BaseException | None) -> None:
    if future.done():  # the reader was cancelled meanwhile
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(data)


class WavSinkOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field("answers", description="a folder, or a file name template")
    rate: int | None = Field(None, description="resample to this rate; default: the voice's")
    realtime: bool = Field(
        False, description="write at playback speed, so speaking lasts as long as the audio"
    )
    keep: int = Field(
        100, ge=1, description="answers kept on disk; the oldest are deleted beyond this"
    )

    @field_validator("path")
    @classmethod
    def _known_fields(cls, path: str) -> str:
        try:
            path.format(**dict.fromkeys(TEMPLATE_FIELDS, "x"))
        except (KeyError, IndexError, ValueError) as exc:
            known = ", ".join("{" + name + "}" for name in TEMPLATE_FIELDS)
            raise ValueError(
                f"bad file name template {path!r} ({exc!r}); it may use {known}"
            ) from None
        return path


class WavSink:
    """Writes each spoken answer to a WAV file as it streams in (an answers folder by default).

    ``path`` is a folder (one file per answer), a ``.wav`` file (the latest answer), or a
    template with {site_id}, {run_id} and {time}. Only the newest ``keep`` answers stay on
    disk: a daemon that runs for months must not fill it.
    """

    def __init__(self, options: WavSinkOptions, app: Any = None) -> None:
        self.options = options
        self.written: list[Path] = []  # oldest first, at most ``keep``

    @property
    def template(self) -> str:
        template = self.options.path
        if "{" not in template and not template.lower().endswith(".wav"):
            template = str(Path(template) / "{site_id}-{time}-{run_id}.wav")
        return template

    def load(self) -> None:
        """Adopt the answers an earlier run left, so they count against ``keep`` too."""
        pattern = Path(_FIELD.sub("*", self.template))
        if pattern.parent.is_dir() and "*" in pattern.name:
            earlier = sorted(pattern.parent.glob(pattern.name), key=_mtime)
            self.written.extend(path for path in earlier if path.is_file())
            self._prune()

    def close(self) -> None:
        pass

    def target(self, run_id: str, site_id: str) -> Path:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        path = Path(self.template.format(site_id=site_id, run_id=run_id[:8], time=stamp))
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _remember(self, path: Path) -> None:
        if path in self.written:  # a fixed file name: rewritten, not a new answer
            self.written.remove(path)
        self.written.append(path)
        self._prune()

    def _prune(self) -> None:
        while len(self.written) > self.options.keep:
            oldest = self.written.pop(0)
            try:
                oldest.unlink(missing_ok=True)
            except OSError as exc:
                log.warning("WAV sink could not delete old answer %s: %s", oldest, exc)

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
                    self._remember(path)
                for piece in _slices(chunk, self.options.realtime):
                    if self.options.realtime:  # like a loudspeaker: a cancel stops it mid-answer
                        started = await _paced(started, played)
                        played += len(piece) / chunk.format.bytes_per_second
                    wav.writeframes(converter.convert(piece))
            if wav is not None and converter is not None:
                wav.writeframes(converter.convert(b"", last=True))
        finally:
            if wav is not None:
                wav.close()


async def _paced(started: float, played: float) -> float:
    """Wait until ``played`` seconds after ``started``; the start, moved on by a gap in the
    stream (paused media) longer than ``UNDERRUN_SECONDS``: a loudspeaker does not catch up."""
    behind = time.monotonic() - (started + played)
    if behind > UNDERRUN_SECONDS:
        return started + behind
    await asyncio.sleep(max(0.0, -behind))
    return started


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


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
