"""Temperature fallback for the short decode, as Whisper and faster-whisper do it.

A greedy (or beam) decode that fails Whisper's thresholds — its text compresses too well (a
loop), or its average log-probability is too low — is decoded again by sampling at rising
temperatures (0.2 ... 1.0, ``best_of`` samples each) until one passes. When none passes,
the decode kept is the most probable one among those that do not loop (faster-whisper's
rule), else the most probable of all.

Two things differ from faster-whisper's long-form loop, both because a command is short and
its decode has a token budget (``common.max_new_tokens``): a loop ends (or is cut) long before
its text compresses well ("1-1-2-3-3-4-3-4-3-4-4-4-4-4-4-", Whisper base on espeak-ng's
"关闭卧室的灯", compresses 1.4x, not 2.4x), so a decode that spends its whole budget, or whose
tokens are mostly the same few (``repetitive``), counts as a loop too; and the compression
ratio is taken on the text as decoded, before the loop guard (``segments.py``) cut it.

Silence is not retried: a decode with a no-speech probability above ``no_speech_threshold``
and a low log-probability is no speech (Whisper's rule), whatever the temperature.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import Field

from voiced.api.recognition import Decode

from .common import WhisperOptions

__all__ = ["Decode", "FallbackOptions", "failure", "loops", "repetitive", "with_fallback"]

DEFAULT_TEMPERATURES = (0.2, 0.4, 0.6, 0.8, 1.0)
LOOP_MIN_TOKENS = 12
LOOP_MAX_DISTINCT = 1 / 3
"""A decode of at least LOOP_MIN_TOKENS text tokens of which at most this share are distinct
is a loop (docs/asr.md, "Tuned constants")."""


class FallbackOptions(WhisperOptions):
    """The fallback's options, for both engines (``[stages.asr.<engine>]``)."""

    temperatures: list[float] = Field(
        default_factory=lambda: list(DEFAULT_TEMPERATURES),
        description="temperature fallback: when the greedy/beam decode fails Whisper's "
        "thresholds (compression ratio, log-probability, or it spends its whole token budget) "
        "and is no command, sample again at these temperatures until one passes; [] for none",
    )
    best_of: int = Field(5, ge=1, le=16, description="samples per fallback temperature")
    seed: int | None = Field(
        0, description="the sampler's random seed, set at load (fallback samples repeat)"
    )


def repetitive(tokens: Sequence[int]) -> bool:
    """Whether text tokens are a loop too short for the compression ratio to tell."""
    return len(tokens) >= LOOP_MIN_TOKENS and len(set(tokens)) <= len(tokens) * LOOP_MAX_DISTINCT


def failure(decode: Decode, options: WhisperOptions) -> str | None:
    """Why ``decode`` needs a fallback (None: it passes, or it is silence)."""
    lp, cr, ns = (
        options.log_prob_threshold,
        options.compression_ratio_threshold,
        options.no_speech_threshold,
    )
    low = lp is not None and decode.avg_logprob < lp
    if ns is not None and decode.no_speech_prob > ns and low:
        return None  # silence: Whisper does not retry it either
    if decode.loop:
        return decode.loop
    if cr is not None and decode.compression_ratio > cr:
        return f"compression ratio {decode.compression_ratio:.2f} > {cr}"
    if low:
        return f"avg log-prob {decode.avg_logprob:.2f} < {lp}"
    return None


def best_of_failed(decodes: Sequence[Decode], options: WhisperOptions) -> Decode:
    """faster-whisper's pick when every temperature failed: the most probable decode that
    does not loop, else the most probable of all."""
    fine = [d for d in decodes if not loops(d, options)]
    return max(fine or decodes, key=lambda d: d.avg_logprob)


def loops(decode: Decode, options: WhisperOptions) -> bool:
    """Whether ``decode`` is a loop: told as one, or its text compresses too well."""
    cr = options.compression_ratio_threshold
    return bool(decode.loop) or (cr is not None and decode.compression_ratio > cr)


def with_fallback(
    first: Decode,
    temperatures: Sequence[float],
    options: WhisperOptions,
    decode_at: Callable[[float], Decode],
) -> tuple[Decode, list[dict[str, Any]]]:
    """The decode to go on with, and what each temperature tried gave (empty: no fallback)."""
    why = failure(first, options)
    if why is None or not temperatures:
        return first, []
    tried = [first.summary(why)]
    decodes = [first]
    for temperature in temperatures:
        decode = decode_at(temperature)
        why = failure(decode, options)
        tried.append(decode.summary(why))
        decodes.append(decode)
        if why is None:
            return decode, tried
    return best_of_failed(decodes, options), tried
