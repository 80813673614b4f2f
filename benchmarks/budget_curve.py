"""The anytime budget's curve, replayed from one run without a budget.

The recognizer's steps are deterministic (greedy and beam decodes, forced scores), so what a
budget changes is only which steps start: a step starts while the time spent is under the
budget, and once one is skipped every later one is (``listen/driver.py``). From each file's
steps and their times in a run without a budget (``benchmarks.recognition`` rows keep them),
the outcome under a budget follows: the decided reading when the step that decided started
in time, else the free reading before the home's steps (its verdict is kept per file);
latency less the skipped steps' time. ``scale`` multiplies every time (0.5: a machine twice
as fast as the run's), to read the curve for a quieter machine than the measured one.

It is an upper bound: it does not model the cut of a constrained search under way (a
rescoring begun in time runs to its end here), and a loaded machine's times drift between
rows. The real budget rows (``voiced: budget X s``) are the curve; the replay reads many
budgets from one run (on the tuning set at load 15, budget 0.5 s: replayed 81/105 right,
measured 75/105).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmarks.common import stats


@dataclass
class Point:
    """The set's figures under one budget."""

    budget_s: float | None
    right: int = 0
    commands: int = 0
    false_activations: int = 0
    idle: int = 0
    unknown: int = 0
    """Files whose fallback decided and would be cut: the reading before it is not kept."""
    cut: int = 0
    """Files where a step was skipped."""
    latencies_ms: list[float] = field(default_factory=list)

    def cells(self) -> list[str]:
        lat = stats(self.latencies_ms)
        budget = "none" if self.budget_s is None else f"{self.budget_s:g} s"
        return [
            budget,
            f"{self.right}/{self.commands} {self.right / max(1, self.commands):.1%}",
            f"{self.false_activations}/{self.idle}",
            str(self.cut),
            str(self.unknown),
            f"{lat['median']:.0f}",
            f"{lat['p90']:.0f}" if lat["p90"] is not None else "-",
            f"{lat['max']:.0f}",
        ]


HEADER = ["budget", "intent right", "false act.", "cut", "unknown", "p50 ms", "p90 ms", "max ms"]


def replay(files: list[dict[str, Any]], budget_s: float | None, scale: float = 1.0) -> Point:
    """The figures ``files`` (records of a run without a budget) would have under ``budget_s``."""
    point = Point(budget_s)
    for record in files:
        verdict, ms = outcome(record, budget_s, scale)
        point.latencies_ms.append(ms)
        point.unknown += verdict == "unknown"
        point.cut += ms < record["ms"] * scale
        if record["kind"] == "command":
            point.commands += 1
            point.right += verdict == "right"
        else:
            point.idle += 1
            point.false_activations += verdict in ("false", "unknown")
    return point


def outcome(record: dict[str, Any], budget_s: float | None, scale: float) -> tuple[str, float]:
    """(verdict, latency ms) of one file under ``budget_s``."""
    steps = record.get("steps") or []
    total = record["ms"] * scale
    if budget_s is None or not steps:
        return record["verdict"], total
    started = 0.0
    skipped: list[tuple[str, float]] = []
    for index, (name, ms) in enumerate(steps):
        if index > 0 and (skipped or started >= budget_s * 1000):
            skipped.append((name, ms * scale))
        started += ms * scale
    if not skipped:
        return record["verdict"], total
    latency = total - sum(ms for _, ms in skipped)
    if record["decided"] not in {name for name, _ in skipped}:
        return record["verdict"], latency
    if record["decided"] == "fallback":
        return "unknown", latency
    return record["free_verdict"], latency


def table(files: list[dict[str, Any]], budgets: list[float | None], scale: float = 1.0) -> str:
    """The curve as a text table."""
    lines = [HEADER] + [replay(files, b, scale).cells() for b in budgets]
    widths = [max(len(line[i]) for line in lines) for i in range(len(HEADER))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in lines
    )
