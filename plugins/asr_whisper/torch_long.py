"""Audio longer than Whisper's 30-second window on the torch engine: transformers' own
sequential long-form ``generate`` (timestamps, the next window from the last whole segment,
temperature fallback under Whisper's thresholds), without the home-aware steps."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from voiced.api.intents import Transcript

from .common import FULL_WINDOW_S, SAMPLE_RATE


def thresholds(options: Any) -> dict[str, Any]:
    """Whisper's fallback thresholds as ``generate`` takes them (those that are set)."""
    kwargs: dict[str, Any] = {"temperature": (0.0, *options.temperatures)}
    if options.compression_ratio_threshold is not None:
        kwargs["compression_ratio_threshold"] = options.compression_ratio_threshold
    if options.log_prob_threshold is not None:
        kwargs["logprob_threshold"] = options.log_prob_threshold
        if options.no_speech_threshold is not None:
            kwargs["no_speech_threshold"] = options.no_speech_threshold
    return kwargs


def long_form(
    engine: Any, samples: np.ndarray, language: str | None, data: dict[str, Any]
) -> Transcript:
    """The transcript of ``samples`` (16 kHz, longer than one window) on ``engine``."""
    torch, opts = engine._torch, engine.options
    started = time.perf_counter()
    inputs = engine.processor.feature_extractor(
        samples,
        sampling_rate=SAMPLE_RATE,
        truncation=False,
        padding="longest",
        return_attention_mask=True,
        return_tensors="pt",
    )
    kwargs: dict[str, Any] = {"task": opts.task} if engine.multilingual else {}
    if engine.multilingual and language is None:
        language, data["language_probability"] = engine.detect(
            samples[: FULL_WINDOW_S * SAMPLE_RATE]
        )
    if engine.multilingual:
        kwargs["language"] = language
    with torch.inference_mode():
        out = engine.model.generate(
            inputs.input_features.to(engine.device, getattr(torch, engine.dtype)),
            attention_mask=inputs.attention_mask.to(engine.device),
            return_timestamps=True,
            condition_on_prev_tokens=False,
            num_beams=opts.beam_size,
            **thresholds(opts),
            **kwargs,
        )
    sequences = out["sequences"] if isinstance(out, dict) else out
    text = engine.processor.batch_decode(sequences, skip_special_tokens=True)[0].strip()
    data |= {
        "window_s": FULL_WINDOW_S,
        "long_form": True,
        "timings_ms": {"total": round((time.perf_counter() - started) * 1000, 1)},
    }
    seconds = len(samples) / SAMPLE_RATE
    return Transcript(text, language or "en", engine.name, seconds, not text, data)
