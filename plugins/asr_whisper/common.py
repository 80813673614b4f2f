"""What both Whisper engines share: options, the encoder window, and the no-speech guards."""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from voiced.api.audio import PIPELINE_FORMAT, pcm_to_float
from voiced.api.intents import Transcript

SAMPLE_RATE = 16000
WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*|%", re.UNICODE)
"""A word of a transcript (apostrophes inside it kept), or "%"."""

FULL_WINDOW_S = 30
HOP_SAMPLES = 160
"""Samples a log-mel frame advances by (100 frames a second)."""


def words_of(text: str) -> list[str]:
    """The words of ``text`` (``WORD``), casefolded."""
    return WORD.findall(text.casefold())


class WhisperOptions(BaseModel):
    """Options common to the two engines (``[stages.asr.<engine>]`` in the config)."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        "bundled:tiny.en",
        description="bundled:tiny.en, bundled:base (multilingual), a local dir or a hub id",
    )
    device: str = Field("auto", description="auto | cpu | cuda | cuda:N (ROCm GPUs are cuda)")
    language: str | None = Field(None, description="None: English models say en, others detect")
    task: Literal["transcribe", "translate"] = "transcribe"
    beam_size: int = Field(1, ge=1, le=16, description="1 is greedy decoding")
    window: Literal["full", "fit"] = Field(
        "fit",
        description="encoder context: 'full' pads every utterance to Whisper's 30 s, 'fit' sizes "
        "it to the utterance (much faster for short commands; see docs/asr.md)",
    )
    fit_padding_s: float = Field(1.0, ge=0.0, le=30.0)
    fit_min_s: float = Field(5.0, ge=1.0, le=30.0)
    no_speech_threshold: float | None = Field(0.6, ge=0.0, le=1.0)
    no_speech_reject: float | None = Field(
        0.9,
        ge=0.0,
        le=1.0,
        description="above this no-speech probability: no speech, whatever "
        "the log-probability (tiny models read quiet noise as 'you' with fair confidence)",
    )
    log_prob_threshold: float | None = -1.0
    compression_ratio_threshold: float | None = 2.4
    silence_dbfs: float | None = Field(
        -60.0, description="audio quieter than this (RMS, dBFS) is no speech without inference"
    )
    allow_download: bool = Field(
        True, description="false: a hub id must already be in the local cache (no network)"
    )
    warmup: bool = True


def window_seconds(audio_seconds: float, options: WhisperOptions) -> int:
    """The encoder window for an utterance: whole seconds, at most Whisper's 30."""
    if options.window == "full" or audio_seconds >= FULL_WINDOW_S:
        return FULL_WINDOW_S
    fit = max(options.fit_min_s, audio_seconds + options.fit_padding_s)
    return min(FULL_WINDOW_S, math.ceil(fit))


def window_audio(samples: np.ndarray, window: int, width: int | None = None) -> np.ndarray:
    """The audio an encoder window's features are computed from, alike in both engines: a
    fitted window's, padded with silence to ``width`` seconds (default ``window``; as Whisper
    was trained: fewer errors, measured); the full window's, the audio alone (at most 30 s),
    its features then padded with zeros (``fill_frames``), as faster-whisper computes them."""
    if window == FULL_WINDOW_S:
        return samples[: FULL_WINDOW_S * SAMPLE_RATE]
    padded = np.zeros((width or window) * SAMPLE_RATE, dtype=np.float32)
    padded[: len(samples)] = samples[: len(padded)]
    return padded


def fill_frames(features: np.ndarray, frames: int) -> np.ndarray:
    """Log-mel ``features`` (..., mels, time) cut or padded with zeros to ``frames``."""
    features = features[..., :frames]
    missing = frames - features.shape[-1]
    if missing <= 0:
        return features
    return np.pad(features, [(0, 0)] * (features.ndim - 1) + [(0, missing)])


def max_new_tokens(audio_seconds: float, limit: int) -> int:
    """A decode budget for an utterance: fast speech is ~6 tokens/s, plus timestamps and slack.

    Without it a fitted window that makes Whisper repeat itself would run to the 448-token
    limit; the repeats are dropped anyway, but the time would be spent.
    """
    return min(limit, 24 + math.ceil(audio_seconds * 10))


def pcm16_to_float(audio: bytes) -> np.ndarray:
    """Pipeline PCM -> mono float32 samples, with the core's conversion (a stray byte dropped)."""
    return pcm_to_float(audio[: len(audio) // 2 * 2], PIPELINE_FORMAT)[:, 0]


def rms_dbfs(samples: np.ndarray) -> float:
    if samples.size == 0:
        return -math.inf
    rms = float(np.sqrt(np.mean(np.square(samples, dtype=np.float64))))
    return 20.0 * math.log10(rms) if rms > 0 else -math.inf


def compression_ratio(text: str) -> float:
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


@dataclass(frozen=True)
class Verdict:
    no_speech: bool
    reason: str = ""


def judge(text: str, avg_logprob: float, no_speech_prob: float, options: WhisperOptions) -> Verdict:
    """Whisper's own rules for "this was not speech", applied to one utterance.

    - no text, or only punctuation;
    - no_speech_prob above ``no_speech_threshold`` unless the text was decoded confidently
      (avg log-prob above ``log_prob_threshold``): OpenAI's rule;
    - no_speech_prob above ``no_speech_reject``, however confident the decode;
    - a repetitive decode (compression ratio above the threshold): a hallucination loop.
    """
    if not any(ch.isalnum() for ch in text):
        return Verdict(True, "no words")
    ns, cr = options.no_speech_threshold, options.compression_ratio_threshold
    if silent_by_rule(no_speech_prob, avg_logprob, options):
        return Verdict(
            True, f"no_speech_prob {no_speech_prob:.2f} > {ns}, log-prob {avg_logprob:.2f}"
        )
    if options.no_speech_reject is not None and no_speech_prob > options.no_speech_reject:
        return Verdict(True, f"no_speech_prob {no_speech_prob:.2f} > {options.no_speech_reject}")
    if cr is not None and compression_ratio(text) > cr:
        return Verdict(True, f"compression ratio {compression_ratio(text):.2f} > {cr}")
    return Verdict(False)


def silent_by_rule(no_speech_prob: float, avg_logprob: float, options: WhisperOptions) -> bool:
    """OpenAI's no-speech rule: a no-speech probability above ``no_speech_threshold`` and a
    decode below ``log_prob_threshold``."""
    ns, lp = options.no_speech_threshold, options.log_prob_threshold
    return ns is not None and no_speech_prob > ns and (lp is None or avg_logprob < lp)


def too_quiet(samples: np.ndarray, options: WhisperOptions) -> str | None:
    """Why the utterance is too quiet to hold speech (``silence_dbfs``), or None."""
    level = rms_dbfs(samples)
    if options.silence_dbfs is not None and level < options.silence_dbfs:
        return f"level {level:.0f} dBFS < {options.silence_dbfs}"
    return None


def decoded_transcript(
    engine: str,
    text: str,
    language: str | None,
    seconds: float,
    verdict: Verdict,
    data: dict,
    dropped: list | None = None,
) -> Transcript:
    """The transcript of one decode: text cleared (and kept as ``raw_text``) when the verdict
    says no speech; segments a loop guard dropped are named."""
    if dropped:
        data["dropped_segments"] = dropped
    if verdict.no_speech:
        data |= {"rejected": verdict.reason, "raw_text": text}
        text = ""
    return Transcript(text, language or "en", engine, seconds, verdict.no_speech, data)
