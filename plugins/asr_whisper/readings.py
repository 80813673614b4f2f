"""A decode's readings as the recognizer takes them, for either engine: the prompt a decode
starts from, and its token sequences made into a ``Decode`` (text past the audio dropped,
best first, loops named)."""

from __future__ import annotations

from typing import Any

from voiced.api.recognition import Decode, Hypothesis

from .choose import unique
from .common import compression_ratio
from .fallback import repetitive
from .segments import first_sentences, spoken_text


def whisper_prompt(
    tokenizer: Any, prompt_text: str, timestamps: bool, max_length: int
) -> list[int]:
    """The decoder's prompt: ``prompt_text`` as the previous text (its last half-context of
    tokens), the start sequence, and no-timestamps unless ``timestamps``."""
    prompt = list(tokenizer.sot_sequence)
    if prompt_text:
        words = tokenizer.encode(" " + prompt_text.strip())[-(max_length // 2 - 1) :]
        prompt = [tokenizer.sot_prev, *words, *prompt]
    if not timestamps:
        prompt.append(tokenizer.no_timestamps)
    return prompt


def readings_decode(
    readings: list[tuple[list[int], float]],
    tokenizer: Any,
    seconds: float,
    timestamps: bool,
    budget: int,
    no_speech_prob: float,
    temperature: float,
    count: int,
) -> Decode:
    """The ``Decode`` of ``readings`` (tokens, mean log-probability a token): the best
    ``count`` distinct texts, best first; what is judged (compression, loops) of the best."""
    decoded = []
    for tokens, avg_logprob in readings:
        if timestamps:
            text, cut = spoken_text(tokens, tokenizer.timestamp_begin, seconds, tokenizer.decode)
        else:
            text, cut = first_sentences(tokenizer.decode(tokens))
        decoded.append((float(avg_logprob), text, int(cut), tokens))
    decoded.sort(key=lambda d: -d[0])  # samples come in no particular order
    _, _, dropped, tokens = decoded[0]
    text_tokens = [t for t in tokens if t < tokenizer.eot]
    loop = ""
    if len(tokens) >= budget:
        loop = "spent its whole token budget (a loop)"
    elif repetitive(text_tokens):
        loop = f"a loop: {len(set(text_tokens))} distinct of {len(text_tokens)} tokens"
    return Decode(
        unique([Hypothesis(text, lp) for lp, text, _, _ in decoded])[:count],
        float(no_speech_prob),
        dropped,
        temperature,
        compression_ratio(tokenizer.decode(text_tokens)),
        loop,
    )
