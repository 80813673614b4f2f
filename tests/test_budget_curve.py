"""The budget curve replayed from a run without a budget (benchmarks/budget_curve.py): a step
starts while the time spent is under the budget, later ones are skipped, and the reading kept
is the one before the skipped step that decided."""

from __future__ import annotations

import pytest

from benchmarks.budget_curve import outcome, replay

RESCUED = {
    "file": "a.wav", "kind": "command", "verdict": "right", "ms": 1500.0, "decided": "rescore",
    "free_verdict": "miss",
    "steps": [("first", 200.0), ("fallback", 0.1), ("rescore", 1000.0)],
}  # fmt: skip
"""A command the rescoring saved: 200 ms to its first reading, 1 s rescoring."""
CHATTER = {
    "file": "b.wav", "kind": "chatter", "verdict": "right", "ms": 3000.0, "decided": "first",
    "free_verdict": "right",
    "steps": [("first", 300.0), ("fallback", 0.1), ("rescore", 1200.0), ("retry", 600.0),
              ("second_look", 800.0)],
}  # fmt: skip


def test_without_a_budget_or_with_a_large_one_the_run_is_as_measured():
    assert outcome(RESCUED, None, 1.0) == ("right", 1500.0)
    assert outcome(RESCUED, 5.0, 1.0) == ("right", 1500.0)


def test_a_budget_spent_before_the_deciding_step_keeps_the_free_reading():
    verdict, ms = outcome(RESCUED, 0.15, 1.0)  # spent after the first reading's 200 ms
    assert verdict == "miss"
    assert ms == pytest.approx(1500.0 - 0.1 - 1000.0)  # the fallback and the rescoring skipped


def test_a_step_started_within_the_budget_runs_to_its_end():
    verdict, ms = outcome(CHATTER, 0.5, 1.0)  # the rescoring starts at 300 ms
    assert verdict == "right"
    assert ms == 3000.0 - 600.0 - 800.0


def test_times_scale_for_a_faster_machine():
    assert outcome(RESCUED, 0.15, 0.5) == ("right", 750.0)  # first reading at 100 ms


def test_a_cut_fallback_that_decided_is_counted_unknown_and_as_a_false_activation_for_chatter():
    fell_back = {**CHATTER, "decided": "fallback", "verdict": "right"}
    assert outcome(fell_back, 0.1, 1.0)[0] == "unknown"
    point = replay([fell_back, RESCUED], 0.1)
    assert (point.unknown, point.false_activations, point.right, point.cut) == (1, 1, 0, 2)
