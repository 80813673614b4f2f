"""Whisper's decoding searches on torch, as CTranslate2 runs them for the other engine.

- ``Rules``: what Whisper forbids at a step (OpenAI's suppressed tokens, a blank or the end
  first, the timestamp rules);
- ``beam_search``: CTranslate2's beam search (``2 x beam`` candidates a step; a finished
  hypothesis is replaced by the next candidate that goes on; it stops at ``beam`` finished
  ones and ranks them by total log-probability over their length), its best ``count``;
  a beam of one is greedy decoding;
- ``sample``: ``count`` decodes sampled at a temperature in one batch, each scored with the
  model's own (untempered) log-probabilities, as CTranslate2 scores its samples.

Both return each reading's tokens (the end of text left out) and its mean log-probability a
token, the end counted: what ``ct2.py`` makes of CTranslate2's scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .torch_decoder import DecoderCalls

MAX_INITIAL_TIMESTAMP_S = 1.0
TIME_PRECISION_S = 0.02

Reading = tuple[list[int], float]
"""A decode's tokens and its mean log-probability a token."""


@dataclass(frozen=True)
class Rules:
    """What Whisper may not write next (applied to a batch of logits in place)."""

    suppress: Any
    """Token ids never written (a tensor on the logits' device)."""
    begin: Any
    """Token ids not written first (the blank, the end of text)."""
    eot: int
    no_timestamps: int
    timestamp_begin: int
    timestamps: bool

    def apply(self, torch: Any, logits: Any, sequences: list[list[int]], step: int) -> None:
        logits[:, self.suppress] = float("-inf")
        if step == 0:
            logits[:, self.begin] = float("-inf")
        if self.timestamps:
            for row, tokens in enumerate(sequences):
                self._timestamp_rules(torch, logits[row], tokens)

    def _timestamp_rules(self, torch: Any, logits: Any, tokens: list[int]) -> None:
        """OpenAI's ApplyTimestampRules for one sequence (in place)."""
        tb, inf = self.timestamp_begin, float("-inf")
        logits[self.no_timestamps] = inf
        last_ts = len(tokens) >= 1 and tokens[-1] >= tb
        penultimate_ts = len(tokens) < 2 or tokens[-2] >= tb
        if last_ts:
            if penultimate_ts:
                logits[tb:] = inf
            else:
                logits[: self.eot] = inf
        stamps = [t for t in tokens if t >= tb]
        if stamps:
            floor = stamps[-1] if last_ts and not penultimate_ts else stamps[-1] + 1
            logits[tb:floor] = inf
        if not tokens:
            logits[:tb] = inf
            logits[tb + int(MAX_INITIAL_TIMESTAMP_S / TIME_PRECISION_S) + 1 :] = inf
        logprobs = torch.log_softmax(logits, dim=-1)
        # as a mask, not an `if`: a Python branch on a GPU value waits for the device
        logits[:tb].masked_fill_(torch.logsumexp(logprobs[tb:], dim=-1) > logprobs[:tb].max(), inf)


@dataclass
class _Beams:
    """The live hypotheses of a beam search: tokens, total log-probability, parent row."""

    tokens: list[list[int]]
    totals: list[float]
    parents: list[int]


def beam_search(
    torch: Any,
    decoder: DecoderCalls,
    encoded: Any,
    first: tuple[Any, Any],
    rules: Rules,
    beam: int,
    count: int,
    max_steps: int,
) -> list[Reading]:
    """CTranslate2's beam search from the prompt's ``first`` (logits of its last position
    (1, vocabulary), cache); the best ``count`` readings, best first."""
    rows, cache = first
    live = _Beams([[]], [0.0], [0])
    finished: list[tuple[float, list[int]]] = []
    for step in range(max_steps):
        rules.apply(torch, rows, live.tokens, step)
        scores = (
            torch.log_softmax(rows, dim=-1) + torch.tensor(live.totals, device=rows.device)[:, None]
        )
        top, ids = scores.reshape(-1).topk(min(2 * beam, scores.numel()))
        vocabulary = rows.shape[-1]
        candidates = [
            (total, index // vocabulary, index % vocabulary)
            for total, index in zip(top.tolist(), ids.tolist(), strict=True)
        ]
        live = _next_beams(live, candidates, beam, rules.eot, finished, step == max_steps - 1)
        if len(finished) >= beam or not live.tokens:
            break
        decoder.reorder(cache, live.parents, rows.shape[0], rows.device)
        logits, cache = decoder.steps([[t[-1]] for t in live.tokens], encoded, cache)
        rows = logits[:, -1]
    ranked = sorted(finished, key=lambda f: -f[0] / max(1, len(f[1])))[:count]
    return [(tokens, total / (len(tokens) + 1)) for total, tokens in ranked]


def _next_beams(
    live: _Beams,
    candidates: list[tuple[float, int, int]],
    beam: int,
    eot: int,
    finished: list[tuple[float, list[int]]],
    last: bool,
) -> _Beams:
    """The first ``beam`` candidates go on; one that ends (or any, at the last step) is
    finished and replaced by the next candidate that does not end."""
    spare = beam
    kept = _Beams([], [], [])
    for total, parent, token in candidates[:beam]:
        if token == eot or last:
            finished.append((total, live.tokens[parent] + ([] if token == eot else [token])))
            going_on = [j for j in range(spare, len(candidates)) if candidates[j][2] != eot]
            if last or not going_on:
                continue
            spare = going_on[0] + 1
            total, parent, token = candidates[going_on[0]]
        kept.tokens.append([*live.tokens[parent], token])
        kept.totals.append(total)
        kept.parents.append(parent)
    return kept


def sample(
    torch: Any,
    decoder: DecoderCalls,
    encoded: Any,
    first: tuple[Any, Any],
    rules: Rules,
    temperature: float,
    count: int,
    generator: Any,
    max_steps: int,
) -> list[Reading]:
    """``count`` decodes sampled at ``temperature`` from the prompt's ``first`` (logits of
    its last position (1, vocabulary), cache), in one batch."""
    logits, cache = first
    cache.reorder_cache(torch.zeros(count, dtype=torch.long, device=logits.device))
    rows = logits.expand(count, -1).clone()
    tokens: list[list[int]] = [[] for _ in range(count)]
    totals = [0.0] * count
    done = [False] * count
    for step in range(max_steps):
        rules.apply(torch, rows, tokens, step)
        logprobs = torch.log_softmax(rows, dim=-1)
        probs = torch.softmax(rows / temperature, dim=-1)
        chosen = torch.multinomial(probs, 1, generator=generator)[:, 0].tolist()
        picked = logprobs.gather(-1, torch.tensor(chosen, device=rows.device)[:, None])
        for row, (token, logprob) in enumerate(zip(chosen, picked[:, 0].tolist(), strict=True)):
            if done[row]:
                continue
            totals[row] += logprob
            done[row] = token == rules.eot
            if not done[row]:
                tokens[row].append(token)
        if all(done):
            break
        feed = [[rules.eot if done[r] else chosen[r]] for r in range(count)]
        logits, cache = decoder.steps(feed, encoded, cache)
        rows = logits[:, -1]
    return [(t, total / (len(t) + 1)) for t, total in zip(tokens, totals, strict=True)]
