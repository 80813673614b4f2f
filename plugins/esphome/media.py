"""Media Home Assistant asks a device to play (an announcement's TTS, a chime): fetched over
HTTP with a size and time cap, decoded, converted to the pipeline format, scaled by volume."""

from __future__ import annotations

import io
import struct
import urllib.request
from urllib.parse import urlparse

import numpy as np

from voiced.api.audio import (
    PIPELINE_FORMAT,
    AudioChunk,
    AudioFormatError,
    float_to_pcm16,
    resample,
    to_mono,
)

CHUNK_SECONDS = 0.5


class MediaError(RuntimeError):
    """Media that cannot be played: a bad URL, too big, too slow, not audio."""


def fetch(url: str, max_bytes: int, seconds: float) -> bytes:
    """The body at ``url`` (http or https only), at most ``max_bytes``."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise MediaError(f"not an http(s) URL: {url[:200]!r}")
    request = urllib.request.Request(url, headers={"User-Agent": "voiced-esphome"})
    try:
        with urllib.request.urlopen(request, timeout=seconds) as reply:
            body = reply.read(max_bytes + 1)
    except OSError as exc:
        raise MediaError(f"cannot fetch {_short(url)}: {exc}") from None
    if len(body) > max_bytes:
        raise MediaError(f"{_short(url)} is over the cap of {max_bytes} bytes")
    return body


def decode(body: bytes, volume: float = 1.0) -> list[AudioChunk]:
    """A sound file's bytes (WAV, FLAC, OGG, MP3 as libsndfile reads them) as pipeline-format
    chunks of ``CHUNK_SECONDS``, scaled by ``volume`` (0..1)."""
    import soundfile

    try:
        data, rate = soundfile.read(io.BytesIO(sized_wav(body)), dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, TypeError) as exc:
        raise AudioFormatError(f"not a readable sound file ({exc})") from None
    samples = resample(to_mono(data), int(rate), PIPELINE_FORMAT.rate)
    pcm = float_to_pcm16(np.clip(samples * max(0.0, min(1.0, volume)), -1.0, 1.0))
    step = int(PIPELINE_FORMAT.bytes_per_second * CHUNK_SECONDS)
    return [AudioChunk(pcm[i : i + step]) for i in range(0, len(pcm), step)]


def sized_wav(body: bytes) -> bytes:
    """``body`` with the sizes of a WAV file written as a stream set to what it holds: Home
    Assistant's TTS streams WAV with a data size of 0 or 0xFFFFFFFF (no length known yet),
    which libsndfile takes literally. Any other body comes back unchanged."""
    if len(body) < 12 or body[:4] != b"RIFF" or body[8:12] != b"WAVE":
        return body
    offset = 12
    while offset + 8 <= len(body):
        chunk, size = struct.unpack_from("<4sI", body, offset)
        held = len(body) - offset - 8
        if chunk != b"data":
            offset += 8 + size + (size & 1)
            continue
        if size in (0, 0xFFFFFFFF) or size > held:
            sized = bytearray(body)
            struct.pack_into("<I", sized, 4, len(body) - 8)
            struct.pack_into("<I", sized, offset + 4, held)
            return bytes(sized)
        return body
    return body


def _short(url: str) -> str:
    parsed = urlparse(url)
    return f"{parsed.scheme}://{parsed.netloc}{parsed.path[:60]}"  # no query: tokens stay out
