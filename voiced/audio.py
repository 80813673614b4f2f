"""Audio formats and chunks, and the one conversion at the edge to the pipeline format."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


class AudioFormatError(ValueError):
    """Audio that cannot be read or converted; the message says what and why."""


@dataclass(frozen=True)
class AudioFormat:
    rate: int
    width: int  # bytes per sample
    channels: int

    @property
    def bytes_per_second(self) -> int:
        return self.rate * self.width * self.channels

    def __str__(self) -> str:
        return f"{self.rate} Hz, {self.width * 8}-bit, {self.channels} ch"


PIPELINE_FORMAT = AudioFormat(rate=16000, width=2, channels=1)
PCM_BYTES_PER_SECOND = PIPELINE_FORMAT.bytes_per_second  # 32000: 16 kHz, 16-bit, mono
"""Audio inside the daemon: 16 kHz, 16-bit, mono."""


@dataclass(frozen=True)
class AudioChunk:
    audio: bytes
    format: AudioFormat = PIPELINE_FORMAT
    timestamp: float = field(default_factory=time.monotonic)

    @property
    def samples(self) -> int:
        return len(self.audio) // (self.format.width * self.format.channels)

    @property
    def seconds(self) -> float:
        return self.samples / self.format.rate

    def to_array(self) -> np.ndarray:
        """Samples as float32 in -1..1, shape (frames, channels)."""
        return pcm_to_float(self.audio, self.format)


def pcm_to_float(pcm: bytes, fmt: AudioFormat) -> np.ndarray:
    """Interleaved PCM -> float32 (frames, channels) in -1..1."""
    if fmt.width == 1:  # WAV 8-bit is unsigned
        data = (np.frombuffer(pcm, dtype=np.uint8).astype(np.float32) - 128.0) / 128.0
    elif fmt.width == 2:
        data = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    elif fmt.width == 3:
        raw = np.frombuffer(pcm[: len(pcm) // 3 * 3], dtype=np.uint8).reshape(-1, 3)
        ints = (
            raw[:, 0].astype(np.int32)
            | (raw[:, 1].astype(np.int32) << 8)
            | (raw[:, 2].astype(np.int32) << 16)
        )
        ints = np.where(ints >= 1 << 23, ints - (1 << 24), ints)
        data = ints.astype(np.float32) / float(1 << 23)
    elif fmt.width == 4:
        data = np.frombuffer(pcm, dtype="<i4").astype(np.float32) / float(1 << 31)
    else:
        raise AudioFormatError(f"unsupported sample width {fmt.width} bytes")
    frames = len(data) // fmt.channels
    return data[: frames * fmt.channels].reshape(frames, fmt.channels)


def float_to_pcm16(samples: np.ndarray) -> bytes:
    """float in -1..1 (any shape) -> 16-bit little-endian PCM."""
    # The inverse of pcm_to_float's /32768, rounded: 16-bit -> float -> 16-bit is lossless.
    scaled = np.round(np.asarray(samples, dtype=np.float32) * 32768.0)
    return np.clip(scaled, -32768, 32767).astype("<i2").tobytes()


def to_mono(samples: np.ndarray) -> np.ndarray:
    """(frames, channels) -> (frames,) by averaging channels."""
    return samples.mean(axis=1) if samples.ndim == 2 else samples


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Band-limited resampling of a mono float signal (soxr, high quality)."""
    if from_rate == to_rate or len(samples) == 0:
        return samples.astype(np.float32, copy=False)
    import soxr

    return soxr.resample(samples, from_rate, to_rate).astype(np.float32)


def convert(pcm: bytes, fmt: AudioFormat, target: AudioFormat = PIPELINE_FORMAT) -> bytes:
    """Any PCM -> target format (16-bit mono only as target)."""
    if fmt == target:
        return pcm
    if target.width != 2 or target.channels != 1:
        raise AudioFormatError(f"cannot convert to {target}: only 16-bit mono targets")
    mono = to_mono(pcm_to_float(pcm, fmt))
    return float_to_pcm16(resample(mono, fmt.rate, target.rate))


class StreamConverter:
    """Converts a stream of chunks to the pipeline format, keeping resampler state between them."""

    def __init__(self, fmt: AudioFormat, target: AudioFormat = PIPELINE_FORMAT) -> None:
        if fmt.channels < 1 or fmt.rate < 1000 or fmt.width not in (1, 2, 3, 4):
            raise AudioFormatError(
                f"unusable audio format: {fmt} (use 1-4 byte samples, >= 1 channel, >= 1000 Hz)"
            )
        self.format = fmt
        self.target = target
        self._partial = b""  # the start of a frame split across chunks
        self._resampler = None
        if fmt.rate != target.rate:
            import soxr

            self._resampler = soxr.ResampleStream(fmt.rate, target.rate, 1, dtype="float32")

    def convert(self, pcm: bytes, last: bool = False) -> bytes:
        """Convert the next bytes of the stream. A chunk may end inside a frame (Home
        Assistant streams HTTP body chunks as they come): the part frame waits for the next
        chunk; at the end of the stream (``last``) an incomplete frame is dropped."""
        frame = self.format.width * self.format.channels
        data = self._partial + pcm if self._partial else pcm
        usable = len(data) - len(data) % frame
        self._partial = b"" if last else data[usable:]
        data = data[:usable]
        if self.format == self.target:
            return data
        return self.convert_float(pcm_to_float(data, self.format), last)

    def convert_float(self, samples: np.ndarray, last: bool = False) -> bytes:
        """float (frames, channels) at the source rate -> target PCM."""
        mono = to_mono(samples).astype(np.float32)
        if self._resampler is not None:
            mono = self._resampler.resample_chunk(mono, last=last)
        return float_to_pcm16(mono)


def read_audio_file(path: str | Path) -> tuple[np.ndarray, int]:
    """Read a sound file (WAV of any common width, FLAC, OGG) -> float32 (frames, ch), rate.

    Raises AudioFormatError with the file and the reason for anything unreadable or empty.
    """
    import soundfile

    path = Path(path)
    if not path.is_file():
        raise AudioFormatError(f"{path}: no such file")
    if path.stat().st_size == 0:
        raise AudioFormatError(f"{path}: the file is empty")
    try:
        data, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, TypeError) as exc:
        raise AudioFormatError(f"{path}: not a readable audio file ({exc})") from exc
    if len(data) == 0:
        raise AudioFormatError(f"{path}: the file holds no audio frames")
    return data, int(rate)


def read_pipeline_audio(path: str | Path) -> bytes:
    """Read a sound file and convert it once to 16 kHz mono 16-bit PCM."""
    data, rate = read_audio_file(path)
    return float_to_pcm16(resample(to_mono(data), rate, PIPELINE_FORMAT.rate))


def write_wav(path: str | Path, pcm: bytes, fmt: AudioFormat = PIPELINE_FORMAT) -> None:
    """Write 16-bit PCM to a WAV file."""
    import wave

    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(fmt.channels)
        wav.setsampwidth(fmt.width)
        wav.setframerate(fmt.rate)
        wav.writeframes(pcm)
