"""Audio formats, chunks and conversion at the edge (voiced/audio.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.audio import (
    PCM_BYTES_PER_SECOND,
    PIPELINE_FORMAT,
    AudioChunk,
    AudioFormat,
    AudioFormatError,
    StreamConverter,
    convert,
    float_to_pcm16,
    pcm_to_float,
    read_audio_file,
    read_pipeline_audio,
    resample,
    to_mono,
    write_wav,
)

__all__ = [
    "PCM_BYTES_PER_SECOND",
    "PIPELINE_FORMAT",
    "AudioChunk",
    "AudioFormat",
    "AudioFormatError",
    "StreamConverter",
    "convert",
    "float_to_pcm16",
    "pcm_to_float",
    "read_audio_file",
    "read_pipeline_audio",
    "resample",
    "to_mono",
    "write_wav",
]
