"""Shared bits of the benchmark scripts: stats, one table format, JSON, the machine.

Every latency figure is a p50 (median) with its p90, p99 (only where the count allows) and max
over ``n`` runs, and every row says what was measured and how many runs it is over, so a table
can't claim more than it measured.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".bench"


def ensure_importable() -> None:
    """Make ``voiced`` and ``voiced_plugins`` importable from a checkout without installing."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        import voiced_plugins  # noqa: F401
    except ImportError:  # map plugins/ to voiced_plugins as the installed package does
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "voiced_plugins",
            ROOT / "plugins" / "__init__.py",
            submodule_search_locations=[str(ROOT / "plugins")],
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot map {ROOT / 'plugins'} to voiced_plugins") from None
        module = importlib.util.module_from_spec(spec)
        sys.modules["voiced_plugins"] = module
        spec.loader.exec_module(module)


def percentile(data: list[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile (0-100) of ``data``, or None when the count is too small.

    A percentile is only claimed when at least one sample lies above it: p90 needs 10 samples,
    p99 needs 100.
    """
    if not data or len(data) < math.ceil(100.0 / (100.0 - q)):
        return None
    ordered = sorted(data)
    return ordered[max(0, math.ceil(q / 100.0 * len(ordered)) - 1)]


def stats(values: Iterable[float]) -> dict[str, float | None]:
    """Median (p50), p90, p99, min, max and count of some measurements (raises on none).

    ``p90``/``p99`` are None where the count does not allow them (see ``percentile``).
    """
    data = [float(v) for v in values]
    if not data:
        raise ValueError("no measurements to summarize")
    return {
        "median": statistics.median(data),
        "p90": percentile(data, 90),
        "p99": percentile(data, 99),
        "min": min(data),
        "max": max(data),
        "n": len(data),
    }


@contextmanager
def timer() -> Iterator[dict[str, float]]:
    """``with timer() as t: ...`` then ``t["s"]`` holds the wall seconds it took."""
    result: dict[str, float] = {}
    started = time.perf_counter()
    try:
        yield result
    finally:
        result["s"] = time.perf_counter() - started


@dataclass
class Row:
    """One line of the results table."""

    area: str
    what: str  # what was measured, in words
    unit: str  # "ms", "%", "runs/min", "MiB", "x" ...
    median: float | None = None
    min: float | None = None
    max: float | None = None
    runs: int | None = None  # how many measurements the figure is over
    p90: float | None = None  # None: too few runs to claim it
    p99: float | None = None
    peer: str = ""  # e.g. "0.93x direct faster-whisper"
    note: str = ""

    @classmethod
    def of(
        cls, area: str, what: str, unit: str, summary: dict[str, float | None], **kw: Any
    ) -> Row:
        """A row from a ``stats()`` summary, scaled to ``unit`` (seconds -> ms when unit=ms)."""
        scale = 1000.0 if unit == "ms" else 1.0

        def scaled(key: str) -> float | None:
            value = summary.get(key)
            return None if value is None else value * scale

        return cls(
            area,
            what,
            unit,
            scaled("median"),
            scaled("min"),
            scaled("max"),
            int(summary.get("n") or 0) or None,
            scaled("p90"),
            scaled("p99"),
            **kw,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def format_table(rows: list[Row]) -> str:
    """A plain-text (and Markdown) table: area, measurement, p50, p90, p99, max, runs, peer.

    p90/p99 show "-" where the run count does not allow them; an empty ``rows`` still gives the
    header.
    """
    head = ["area", "measurement", "p50", "p90", "p99", "max", "unit", "runs", "vs peer / note"]
    lines = []
    for r in rows:
        extra = "; ".join(x for x in (r.peer, r.note) if x)
        runs = "-" if r.runs is None else str(r.runs)
        figures = [_num(r.median), _num(r.p90), _num(r.p99), _num(r.max)]
        lines.append([r.area, r.what, *figures, r.unit, runs, extra])
    widths = [max([len(h)] + [len(line[i]) for line in lines]) for i, h in enumerate(head)]

    def fmt(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    out = [fmt(head), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [fmt(line) for line in lines]
    return "\n".join(out)


def ratio(value: float | None, peer: float | None) -> float | None:
    if value is None or peer is None or peer == 0:
        return None
    return value / peer


def machine() -> dict[str, Any]:
    """What ran it: cores, CPU model, RAM, Python, OS, date (UTC)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                ram_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
                break
    except OSError:
        pass
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "ram_gib": ram_gib,
        "python": platform.python_version(),
        "os": f"{platform.system()} {platform.release()}",
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def write_json(path: str | Path, data: Any) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(data, indent=2, default=_default) + "\n")


def _default(value: Any) -> Any:
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    return str(value)


@dataclass
class Section:
    """What one benchmark script returns: its rows, raw results and notes."""

    name: str
    rows: list[Row] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "rows": [r.to_dict() for r in self.rows],
            "results": self.results,
            "notes": self.notes,
        }

    def report(self, json_path: str | Path | None = None) -> None:
        """Print the table and its notes; write the JSON form when asked to."""
        print(format_table(self.rows))
        for note in self.notes:
            print(f"note: {note}")
        if json_path:
            write_json(json_path, self.to_dict())


def asr_detail(record: dict[str, Any] | None) -> str:
    """What the recognizer's per-utterance record (a transcript's ``data``) says it did.

    Every key is optional: the record names the longest sub-step of ``timings_ms`` beside
    ``total``, whether it retried or rescored, and ``hypothesis.why``.
    """
    if not isinstance(record, dict) or not record:
        return ""
    parts = []
    timings = record.get("timings_ms")
    timings = timings if isinstance(timings, dict) else {}
    steps = {k: v for k, v in timings.items() if k != "total" and isinstance(v, int | float)}
    if steps:
        step = max(steps, key=lambda k: steps[k])
        parts.append(f"{step} {steps[step]:.0f} ms")
    if isinstance(timings.get("total"), int | float):
        parts.append(f"decode {timings['total']:.0f} ms")
    retried = record.get("retry_hypotheses")
    if isinstance(retried, list) and retried:
        parts.append(f"retried ({len(retried)} hypotheses)")
    if isinstance(record.get("rescored"), dict) and record["rescored"].get("text"):
        parts.append("rescored")
    hypothesis = record.get("hypothesis")
    why = hypothesis.get("why") if isinstance(hypothesis, dict) else None
    if why:
        parts.append(f"why: {str(why)[:80]}")
    return ", ".join(parts)


def slowest(results: list[dict[str, Any]], key: str, describe: Any, count: int = 5) -> list[str]:
    """The ``count`` results with the largest ``key`` (seconds), one line each: the file, its
    time and ``describe(result)`` (the step that took the time)."""
    timed = [r for r in results if isinstance(r.get(key), int | float)]
    timed.sort(key=lambda r: r[key], reverse=True)
    return [f"{r.get('file', '?')}: {r[key] * 1000:.0f} ms, {describe(r)}" for r in timed[:count]]
