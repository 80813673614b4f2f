"""The torch engine's beam search keeps CTranslate2's rules (torch_search.py), on a decoder
whose next-token probabilities come from a table: N-best ranked by the mean log-probability
a token, a beam of one is greedy, the step limit ends every live hypothesis."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from voiced_plugins.asr_whisper.torch_search import Rules, beam_search  # noqa: E402

EOT, A, B, C, D = 0, 1, 2, 3, 4
VOCABULARY = 6


class Prefixes:
    """The cache of the table decoder: each row's tokens so far."""

    def __init__(self, rows: list[tuple[int, ...]]) -> None:
        self.rows = rows

    def reorder_cache(self, index) -> None:
        self.rows = [self.rows[i] for i in index.tolist()]


class TableDecoder:
    """Next-token probabilities of each prefix, from ``table`` (a missing token: 0)."""

    def __init__(self, table: dict[tuple[int, ...], dict[int, float]]) -> None:
        self.table = table

    def logits(self, prefix: tuple[int, ...]):
        probs = self.table.get(prefix, {EOT: 1.0})
        return torch.tensor([math.log(probs.get(t, 0.0) or 1e-30) for t in range(VOCABULARY)])

    def steps(self, rows, encoded, cache):
        cache.rows = [(*prefix, *row) for prefix, row in zip(cache.rows, rows, strict=True)]
        return torch.stack([self.logits(p) for p in cache.rows])[:, None, :], cache

    def reorder(self, cache, parents, rows, device) -> None:
        cache.rows = [cache.rows[p] for p in parents]


def search(table, beam: int, count: int, max_steps: int = 10):
    decoder = TableDecoder(table)
    rules = Rules(
        torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long), EOT, 5, 6, False
    )
    first = (decoder.logits(())[None, :], Prefixes([()]))
    return beam_search(torch, decoder, None, first, rules, beam, count, max_steps)


TABLE = {
    (): {A: 0.6, B: 0.4},
    (A,): {EOT: 0.5, C: 0.5},
    (A, C): {EOT: 1.0},
    (B,): {EOT: 1.0},
}


def test_the_n_best_are_ranked_by_mean_log_probability_a_token():
    """ "a c" (0.3 in all over two tokens) beats "b" (0.4 over one) and "a" (0.3 over one)."""
    found = search(TABLE, beam=3, count=3)
    assert [tokens for tokens, _ in found] == [[A, C], [B], [A]]
    # reported as CTranslate2's score becomes in ct2.py: the end of text counted as a token
    expected = [math.log(0.3) / 3, math.log(0.4) / 2, math.log(0.3) / 2]
    assert [score for _, score in found] == pytest.approx(expected, abs=1e-6)


def test_count_keeps_the_best_of_the_finished_hypotheses():
    assert [tokens for tokens, _ in search(TABLE, beam=3, count=1)] == [[A, C]]


def test_a_beam_of_one_is_greedy_decoding():
    """The likeliest token each step: "a", then the end of text."""
    table = {**TABLE, (A,): {EOT: 0.6, C: 0.4}}
    assert search(table, beam=1, count=1) == [([A], pytest.approx(math.log(0.36) / 2))]


def test_the_step_limit_ends_every_live_hypothesis_with_what_it_has():
    table = {(): {A: 1.0}, (A,): {B: 1.0}, (A, B): {C: 1.0}, (A, B, C): {D: 1.0}}
    assert search(table, beam=2, count=2, max_steps=3)[0][0] == [A, B, C]


def test_a_finished_hypothesis_is_replaced_by_the_next_candidate_that_goes_on():
    """After "a" the end of text is the best candidate: it is finished, and both readings
    that go on ("a c", "a d") are searched on in a beam of two."""
    table = {
        (): {A: 1.0},
        (A,): {EOT: 0.5, C: 0.3, D: 0.2},
        (A, C): {EOT: 1.0},
        (A, D): {EOT: 1.0},
    }
    found = search(table, beam=2, count=3)
    assert [tokens for tokens, _ in found] == [[A, C], [A], [A, D]]
