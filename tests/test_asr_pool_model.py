"""The cost model behind the pool's sizing table: pure arithmetic and a seeded simulation."""

from __future__ import annotations

import pytest

from benchmarks.pool import (
    burst_added_latency,
    burst_capacity,
    random_capacity,
    simulated_p95_wait,
)


def test_a_burst_waits_one_utterance_cost_per_round_beyond_the_first():
    assert burst_added_latency(1, 1, 0.3) == 0
    assert burst_added_latency(2, 1, 0.3) == pytest.approx(0.3)
    assert burst_added_latency(4, 2, 0.3) == pytest.approx(0.3)
    assert burst_added_latency(7, 3, 0.3) == pytest.approx(0.6)


def test_burst_capacity_is_the_largest_burst_under_the_budget():
    # 0.3 s per utterance: two rounds (0 and 0.3 s of waiting) fit under 0.5 s, three do not
    assert burst_capacity(1, 0.3) == 2
    assert burst_capacity(3, 0.3) == 6
    assert burst_added_latency(burst_capacity(3, 0.3), 3, 0.3) < 0.5
    assert burst_added_latency(burst_capacity(3, 0.3) + 1, 3, 0.3) >= 0.5
    with pytest.raises(ValueError):
        burst_capacity(1, 0.0)


def test_more_workers_sustain_more_sites_with_random_arrivals():
    one, three = random_capacity(1, 0.4, 20.0), random_capacity(3, 0.4, 20.0)
    assert 0 < one < three
    assert simulated_p95_wait(one, 1, 0.4, 20.0) < 0.5
    assert simulated_p95_wait(one + 1, 1, 0.4, 20.0) >= 0.5
