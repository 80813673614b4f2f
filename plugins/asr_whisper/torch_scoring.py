"""torch's scoring primitives: teacher-forced scores of sentences, next-token steps.

The questions ``ct2_scoring.py`` asks CTranslate2, answered alike: a sentence's score is the
mean log-probability of its text tokens after the start sequence and no-timestamps, each
over the text vocabulary (CTranslate2 Whisper ``align``'s ``text_token_probs``); a step is
the log-probabilities of the token after each prefix over the whole vocabulary. Rows of a
batch are padded on the right (the decoder is causal: what follows a position does not
change it) and read after the prompt, which is read once.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from voiced.api.recognition import NextLogprobs

from .torch_decoder import ROWS, DecoderCalls

FLOOR = math.log(1e-9)
"""The least log-probability a token counts with (as CTranslate2's scores are taken)."""


def padded(rows: list[list[int]], pad: int) -> list[list[int]]:
    """``rows`` as one rectangle, each padded on the right with ``pad``."""
    width = max(len(r) for r in rows)
    return [[*r, *([pad] * (width - len(r)))] for r in rows]


def batches(rows: list[Any], size: int = ROWS) -> Iterator[list[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def forced_scores(
    decoder: DecoderCalls, tokenizer: Any, encoded: Any, texts: list[str]
) -> list[float]:
    """Mean log-probability of each text's tokens given the audio (teacher-forced)."""
    tokens = [tokenizer.encode(" " + text.strip()) or [tokenizer.eot] for text in texts]
    scores: list[float] = []
    for batch in batches(tokens):
        scores.extend(_forced_batch(decoder, tokenizer, encoded, batch))
    return scores


def _forced_batch(
    decoder: DecoderCalls, tokenizer: Any, encoded: Any, tokens: list[list[int]]
) -> list[float]:
    torch, eot = decoder.torch, tokenizer.eot
    rows = [[tokenizer.no_timestamps, *t[:-1]] for t in tokens]  # each predicts the next token
    hidden = decoder.after(list(tokenizer.sot_sequence), padded(rows, eot), encoded)
    said = torch.cat([hidden[row, : len(t)] for row, t in enumerate(tokens)])
    logprobs = torch.log_softmax(decoder.logits(said)[:, :eot], dim=-1)
    flat = [t for row in tokens for t in row]
    ids = torch.tensor([min(t, eot - 1) for t in flat], device=logprobs.device)
    picked = logprobs[torch.arange(len(flat), device=logprobs.device), ids]
    beyond = torch.tensor([t >= eot for t in flat], device=logprobs.device)
    picked = picked.masked_fill(beyond, FLOOR).clamp(min=FLOOR).tolist()
    scores, start = [], 0
    for row in tokens:
        scores.append(float(np.mean(picked[start : start + len(row)])))
        start += len(row)
    return scores


def next_logprobs(decoder: DecoderCalls, encoded: Any) -> NextLogprobs:
    """The grammar search's next-token steps in ``encoded`` (one utterance's window)."""

    def steps(prompt: list[int], prefixes: list[tuple[int, ...]]) -> list[np.ndarray]:
        rows: list[np.ndarray] = []
        for batch in batches(prefixes):
            rows.extend(_next_batch(decoder, encoded, prompt, batch))
        return rows

    return steps


def _next_batch(
    decoder: DecoderCalls, encoded: Any, prompt: list[int], prefixes: list[tuple[int, ...]]
) -> list[np.ndarray]:
    torch = decoder.torch
    rows = [[prompt[-1], *p] for p in prefixes]
    hidden = decoder.after(prompt[:-1], padded(rows, prompt[-1]), encoded)
    last = torch.tensor([len(p) for p in prefixes], device=hidden.device)
    picked = hidden[torch.arange(len(rows), device=hidden.device), last]
    return list(torch.log_softmax(decoder.logits(picked), dim=-1).cpu().numpy())
