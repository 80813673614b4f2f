"""One command for every benchmark: ``python -m benchmarks [--quick] [--json FILE] [--gpu]``.

Runs, each in its own process (so one model's threads never slow the next):

- the end-to-end benchmark (benchmarks/e2e.py: latency through the daemon, WER, intents),
- the per-area scripts that exist (asr, tts, intent, mqtt, wyoming, idle_cpu), asking each
  for JSON, and turning it into rows with the peer measured in the same run,
- N concurrent sites (benchmarks/concurrency.py) and memory/idle CPU (benchmarks/memory.py),
- Mandarin and German (benchmarks/languages.py: CER/WER, intents, beside the direct peer),

then prints one table: p50, p90, p99 (where the count allows) and max, how many runs each
figure is over, and ratios against the peers. The table always prints what finished; a script
that is missing, raised (its error) or overran its budget is listed below it. The time budget
is the selected scripts' own estimates times a margin for a busy machine, or ``--budget S``.
``--gpu`` runs the GPU table instead (benchmarks/gpu.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import ROOT, Row, format_table, machine, write_json

BENCH = ROOT / "benchmarks"
BUDGET_MARGIN = 2.5  # a busy machine (load ~4 on 2 cores) runs a script this much slower


@dataclass
class Script:
    """A benchmark script and how to run it quick or in full."""

    name: str
    module: str  # benchmarks.<name>
    quick: list[str] = field(default_factory=list)
    full: list[str] = field(default_factory=list)
    needs_s: tuple[float, float] = (30.0, 90.0)  # rough wall seconds needed: quick, full
    adapter: str = "generic"
    file: Path | None = None  # a script outside benchmarks/ (--script NAME=FILE)

    @property
    def path(self) -> Path:
        return self.file or BENCH / f"{self.name}.py"

    def command(self) -> list[str]:
        """How to start it: ``python -m benchmarks.<name>`` or ``python FILE``."""
        return [sys.executable, *([str(self.file)] if self.file else ["-m", self.module])]


SCRIPTS = [
    Script("e2e", "benchmarks.e2e", ["--limit", "4"], [], (35, 510), "section"),
    Script("asr", "benchmarks.asr", ["--runs", "2", "--engines", "ct2"],
           ["--runs", "3", "--engines", "ct2,ct2-full,hf"], (25, 100), "asr"),
    Script("tts", "benchmarks.tts", ["--runs", "2", "--warmup", "1"], [],
           (12, 40), "tts"),
    Script("wyoming", "benchmarks.wyoming", ["--quick", "--runs", "2"], [], (20, 60)),
    Script("mqtt", "benchmarks.mqtt", ["--events", "2000", "--latency-events", "200"],
           ["--events", "10000", "--latency-events", "1000"], (12, 40), "mqtt"),
    Script("concurrency", "benchmarks.concurrency", ["--commands", "2"], ["--commands", "5"],
           (30, 90), "section"),
    Script("memory", "benchmarks.memory", ["--quick"], ["--runs", "2", "--idle-seconds", "15"],
           (35, 60), "section"),
    Script("intent", "benchmarks.intent", ["--repeat", "1"], ["--repeat", "1"], (15, 40)),
    Script("idle_cpu", "benchmarks.idle_cpu", ["--quick", "--seconds", "5"], ["--seconds", "20"],
           (15, 45)),
    Script("languages", "benchmarks.languages", ["--quick"],
           ["--homes", "floors", "--rate-index", "0", "--no-noise", "--half", "report"],
           (80, 300), "section"),
]  # fmt: skip


# -- running one script -----------------------------------------------------------------------


@dataclass
class Outcome:
    script: Script
    status: str  # ok | text | skipped | raised | overran
    seconds: float = 0.0
    data: Any = None  # parsed JSON
    text: str = ""  # the script's own output when it has no JSON
    note: str = ""
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def help_text(script: Script) -> str:
    out = subprocess.run(
        [*script.command(), "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return out.stdout


def supported(args: list[str], help_: str) -> list[str]:
    """Keep only the options (with their values) the script's --help mentions."""
    kept: list[str] = []
    i = 0
    while i < len(args):
        option = args[i]
        value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("--") else None
        if re.search(rf"(^|\s|\[){re.escape(option)}\b", help_):
            kept += [option] + ([value] if value is not None else [])
        i += 2 if value is not None else 1
    return kept


def json_mode(help_: str) -> str:
    """'file' (--json FILE), 'stdout' (--json flag) or 'none'."""
    match = re.search(r"--json(\s+[A-Z_]+)?", help_)
    if not match:
        return "none"
    return "file" if match.group(1) else "stdout"


def parse_json_output(stdout: str) -> Any:
    try:
        return json.loads(stdout)
    except ValueError:
        pass
    for index, line in enumerate(stdout.splitlines()):
        if line.lstrip().startswith(("{", "[")):
            try:
                return json.loads("\n".join(stdout.splitlines()[index:]))
            except ValueError:
                continue
    raise ValueError("no JSON found in the script's output")


def run_script(script: Script, quick: bool, time_left: float) -> Outcome:
    if not script.path.is_file():
        return Outcome(script, "skipped", note=f"{script.path.relative_to(ROOT)} is not there")
    need = script.needs_s[0 if quick else 1]
    if time_left < need:
        return Outcome(
            script, "skipped", note=f"needs ~{need:.0f} s, {time_left:.0f} s of the budget left"
        )
    started = time.monotonic()
    try:
        help_ = help_text(script)
    except subprocess.TimeoutExpired:
        return Outcome(script, "overran", note="--help did not answer within 60 s")
    mode = json_mode(help_)
    args = supported(script.quick if quick else script.full, help_)
    with tempfile.TemporaryDirectory() as tmp:
        out_file = Path(tmp) / f"{script.name}.json"
        command = [*script.command(), *args]
        if mode == "file":
            command += ["--json", str(out_file)]
        elif mode == "stdout":
            command += ["--json"]
        print(f"[benchmarks] {' '.join(command[1:])}", file=sys.stderr, flush=True)
        timeout = max(10.0, time_left - (time.monotonic() - started))
        try:
            proc = subprocess.run(
                command,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=timeout,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        except subprocess.TimeoutExpired:
            note = f"stopped at its budget of {timeout:.0f} s (raise it with --budget)"
            return Outcome(script, "overran", time.monotonic() - started, note=note)
        seconds = time.monotonic() - started
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
            return Outcome(
                script, "raised", seconds, note=f"exit {proc.returncode}: {' / '.join(tail)}"
            )
        try:
            if mode == "file":
                data = json.loads(out_file.read_text())
            elif mode == "stdout":
                data = parse_json_output(proc.stdout)
            else:
                return from_text(script, seconds, proc.stdout.strip())
        except (OSError, ValueError) as exc:
            note = f"JSON unreadable ({exc}): its own output is printed below"
            return Outcome(script, "text", seconds, text=proc.stdout.strip(), note=note)
    return with_rows(Outcome(script, "ok", seconds, data=data), args)


def with_rows(outcome: Outcome, args: list[str]) -> Outcome:
    """The outcome with its rows read from its JSON by the script's adapter."""
    script, data = outcome.script, outcome.data
    try:
        outcome.rows, outcome.notes = ADAPTERS[script.adapter](script.name, data)
    except Exception as exc:  # a changed schema: fall back to the generic reading
        outcome.rows, outcome.notes = generic(script.name, data)
        outcome.notes.append(f"{script.adapter} adapter failed ({exc}); generic rows shown")
    runs = _option(args, "--runs")
    for row in outcome.rows:
        if row.runs is None and runs is not None:
            row.runs = runs  # what we asked the script for
    return outcome


def _option(args: list[str], name: str) -> int | None:
    if name in args and args.index(name) + 1 < len(args):
        try:
            return int(args[args.index(name) + 1])
        except ValueError:
            return None
    return None


# -- turning results into rows ----------------------------------------------------------------

TABLE_LINE = re.compile(r"^(?P<label>\S.*?)\s{2,}(?P<nums>-?[\d.]+(?:\s+-?[\d.]+)+)\s*$")


def table_lines(text: str) -> list[tuple[str, list[float]]]:
    """(label, numbers) for each line of a plain-text table: a label, then numbers only."""
    found = []
    for line in text.splitlines():
        match = TABLE_LINE.match(line)
        if match:
            found.append((match["label"].strip(), [float(n) for n in match["nums"].split()]))
    return found


def mqtt_text(text: str) -> list[Row]:
    """benchmarks/mqtt.py's table: publisher, events/s, call us, p50/p95/p99 ms."""
    counts = re.search(r"(\d+) events for throughput, (\d+) spaced", text)
    events, spaced = (int(counts[1]), int(counts[2])) if counts else (None, None)
    lines = table_lines(text)
    peer = next((nums for label, nums in lines if "paho" in label), None)
    rows = []
    for label, nums in lines:
        is_peer = "paho" in label
        rate, call_us, p50, p95, p99 = nums[:5]
        ratio = "" if is_peer or not peer else f"{rate / peer[0]:.2f}x raw paho"
        rows.append(Row("mqtt", f"events/s published: {label}", "events/s", rate, runs=1,
                        peer="(the peer)" if is_peer else ratio,
                        note=f"{events} events; {call_us:.1f} us per emit call"))  # fmt: skip
        ratio = "" if is_peer or not peer else f"{p50 / peer[2]:.2f}x raw paho"
        rows.append(Row("mqtt", f"emit -> subscriber latency p50: {label}", "ms", p50,
                        runs=spaced, peer="(the peer)" if is_peer else ratio,
                        note=f"p95 {p95:.2f}, p99 {p99:.2f} ms"))  # fmt: skip
    return rows


def intent_text(text: str) -> list[Row]:
    """benchmarks/intent.py's table: recognizer, median ms, p95, max, n."""
    lines = table_lines(text)
    rows = []
    for index, (label, nums) in enumerate(lines):
        median, p95, most, count = nums[:4]
        is_peer = label.startswith("raw")
        # each voiced line is followed by its peer on the same sentences
        peer = next((n for lab, n in lines[index + 1 :] if lab.startswith("raw")), None)
        ratio = "" if is_peer or not peer else f"{median / peer[0]:.2f}x raw hassil"
        rows.append(Row("intent", f"text -> intent per sentence: {label}", "ms", median,
                        max=most, runs=int(count), peer="(the peer)" if is_peer else ratio,
                        note=f"p95 {p95:.2f} ms"))  # fmt: skip
    return rows


TEXT_ADAPTERS: dict[str, Callable[[str], list[Row]]] = {"mqtt": mqtt_text, "intent": intent_text}


def from_text(script: Script, seconds: float, text: str) -> Outcome:
    """A script without --json: rows read from its printed table when we know its shape."""
    adapter = TEXT_ADAPTERS.get(script.name)
    rows: list[Row] = []
    if adapter is not None:
        try:
            rows = adapter(text)
        except (ValueError, IndexError, TypeError):
            rows = []
    if rows:
        return Outcome(script, "ok", seconds, text=text, rows=rows,
                       notes=["read from its printed table (it has no --json option)"])  # fmt: skip
    return Outcome(script, "text", seconds, text=text,
                   note="no --json option: its own table is printed below")  # fmt: skip


def _is_section(data: Any) -> bool:
    fields = {"area", "what", "unit"}
    rows = data.get("rows") if isinstance(data, dict) else None
    return isinstance(rows, list) and all(isinstance(r, dict) and fields <= r.keys() for r in rows)


def section(name: str, data: Any) -> tuple[list[Row], list[str]]:
    """benchmarks/e2e, concurrency, memory: a Section dict."""
    known = set(Row.__dataclass_fields__)
    rows = [Row(**{k: v for k, v in r.items() if k in known}) for r in data["rows"]]
    return rows, [str(n) for n in data.get("notes", [])]


def asr(name: str, data: Any) -> tuple[list[Row], list[str]]:
    """benchmarks/asr.py: rows with audio, engine, median/min/max ms, rtf, ratio vs direct."""
    rows = []
    runs = data.get("runs") if isinstance(data, dict) else None
    items = data["rows"] if isinstance(data, dict) else data
    for r in items:
        direct = "direct" in r["engine"]
        rows.append(
            Row(
                "asr",
                f"{r['audio']} ({r['audio_s']} s) {r['engine']}: utterance -> text",
                "ms",
                r["median_ms"],
                r["min_ms"],
                r["max_ms"],
                runs=r.get("runs", runs),
                peer="(the peer)" if direct else f"{r['ratio']:.2f}x direct faster-whisper",
                note=f"RTF {r['rtf']:.3f}" + (f", WER {r['wer']:.2f}" if "wer" in r else ""),
            )
        )
    return rows, []


def tts(name: str, data: Any) -> tuple[list[Row], list[str]]:
    """benchmarks/tts.py: first audio / total per text and method, piper direct the peer."""
    rows = []
    runs = data.get("runs")
    results = data["results"]
    peers = {
        r["text"]: r["first_audio_s"]["median"] for r in results if r["method"] == "piper direct"
    }
    for r in results:
        first = r["first_audio_s"]
        peer = peers.get(r["text"])
        is_peer = r["method"] == "piper direct"
        rows.append(
            Row.of(
                "tts",
                f"{r['text']}: {r['method']}: time to first audio",
                "ms",
                {**first, "n": runs or 0},
                peer="(the peer)" if is_peer else (
                    f"{first['median'] / peer:.2f}x direct piper" if peer else ""),
                note=f"RTF {r['rtf']['median']:.3f}",
            )
        )  # fmt: skip
    notes = [f"tts on {data.get('provider', '?')} ({data.get('device', '?')})"]
    return rows, notes


def mqtt(name: str, data: Any) -> tuple[list[Row], list[str]]:
    return generic(name, data)


LABEL_KEYS = ("name", "engine", "method", "text", "audio", "case", "what", "mode", "peer")


def generic(name: str, data: Any) -> tuple[list[Row], list[str]]:
    """Any JSON: each dict holding a median (with min/max) becomes a row named by its path.

    JSON in the shape benchmarks/common.py's Section writes (``rows`` of Row fields) is read
    as it is.
    """
    if _is_section(data):
        return section(name, data)
    rows: list[Row] = []

    def unit_of(key: str) -> tuple[str, float]:
        if key.endswith("_ms") or key == "ms":
            return "ms", 1.0
        if key.endswith("_s") or key == "seconds":
            return "ms", 1000.0
        if "rtf" in key:
            return "RTF", 1.0
        if "per_s" in key or key.endswith("_rate"):
            return "/s", 1.0
        if "pct" in key or "percent" in key or "cpu" in key:
            return "%", 1.0
        return "", 1.0

    def walk(obj: Any, path: list[str]) -> None:
        if isinstance(obj, dict):
            if isinstance(obj.get("median"), int | float):
                unit, scale = next((unit_of(p) for p in reversed(path) if unit_of(p)[0]), ("", 1.0))
                rows.append(
                    Row(
                        name,
                        " / ".join(path) or name,
                        unit,
                        obj["median"] * scale,
                        obj.get("min", obj["median"]) * scale,
                        obj.get("max", obj["median"]) * scale,
                        runs=obj.get("n") or obj.get("runs"),
                        peer=f"{obj['ratio']:.2f}x peer" if "ratio" in obj else "",
                    )
                )
                return
            if isinstance(obj.get("median_ms"), int | float):
                rows.append(
                    Row(
                        name,
                        " / ".join(path) or name,
                        "ms",
                        obj["median_ms"],
                        obj.get("min_ms"),
                        obj.get("max_ms"),
                        runs=obj.get("n") or obj.get("runs"),
                        peer=f"{obj['ratio']:.2f}x peer" if "ratio" in obj else "",
                    )
                )
            for key, value in obj.items():
                if isinstance(value, dict | list):
                    walk(value, [*path, str(key)])
        elif isinstance(obj, list):
            for index, item in enumerate(obj):
                label = str(index)
                if isinstance(item, dict):
                    parts = [
                        str(item[k])
                        for k in LABEL_KEYS
                        if isinstance(item.get(k), str) and len(item[k]) <= 40
                    ]
                    label = " ".join(parts) or label
                walk(item, [*path, label])

    walk(data, [])
    notes = [] if rows else [f"{name}: JSON had no median figures to show"]
    return rows, notes


ADAPTERS: dict[str, Callable[[str, Any], tuple[list[Row], list[str]]]] = {
    "section": section,
    "asr": asr,
    "tts": tts,
    "mqtt": mqtt,
    "generic": generic,
}


# -- the whole run ----------------------------------------------------------------------------


def budget_for(scripts: list[Script], quick: bool) -> float:
    """The whole run's seconds: the scripts' own estimates x ``BUDGET_MARGIN``, 60 s at least."""
    return max(60.0, BUDGET_MARGIN * sum(s.needs_s[0 if quick else 1] for s in scripts))


def run_all(
    quick: bool,
    only: list[str] | None = None,
    budget: float | None = None,
    extra: list[Script] | None = None,
) -> dict[str, Any]:
    """Run the selected scripts in turn, each within what is left of the budget."""
    chosen = [s for s in [*SCRIPTS, *(extra or [])] if not only or s.name in only]
    budget = budget if budget is not None else budget_for(chosen, quick)
    started = time.monotonic()
    if any(s.file is None for s in chosen):
        print("[benchmarks] building the speech test set", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "benchmarks.testset"], cwd=ROOT, check=True,
                       capture_output=True)  # fmt: skip
    outcomes = []
    for script in chosen:
        left = budget - (time.monotonic() - started)
        outcome = run_script(script, quick, left)
        print(
            f"[benchmarks] {script.name}: {outcome.status} in {outcome.seconds:.0f} s"
            + (f" ({outcome.note})" if outcome.note else ""),
            file=sys.stderr,
            flush=True,
        )
        outcomes.append(outcome)
    total = time.monotonic() - started
    return {
        "machine": machine(),
        "quick": quick,
        "budget_s": round(budget, 1),
        "wall_s": round(total, 1),
        "outcomes": outcomes,
    }


def report(result: dict[str, Any]) -> str:
    m = result["machine"]
    outcomes: list[Outcome] = result["outcomes"]
    rows = [row for o in outcomes for row in o.rows]
    lines = [
        f"voiced benchmarks, {m['date']}: {m['nproc']} cores ({m['cpu']}), {m['ram_gib']} GiB "
        f"RAM, Python {m['python']}; {'quick' if result['quick'] else 'full'} run in "
        f"{result['wall_s']:.0f} s of a {result.get('budget_s', 0):.0f} s budget, load average "
        f"{load_average()}. p50, p90, p99 (where the run count allows) and max over the runs "
        "shown, after warm-up.",
        "",
        format_table(rows),
        "",
    ]
    for o in outcomes:
        for note in o.notes:
            lines.append(f"- {o.script.name}: {note}")
    unfinished = [o for o in outcomes if o.status not in ("ok", "text")]
    if unfinished:
        lines += ["", "Did not finish:"]
    for o in unfinished:
        lines.append(f"- {o.script.name}: {o.status} after {o.seconds:.0f} s: {o.note}")
    for o in outcomes:
        if o.status == "text" and o.text:
            lines += ["", f"## {o.script.name} (its own output)", "", o.text]
    return "\n".join(lines)


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, from /proc/loadavg ("?" where there is none)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def extra_script(spec: str) -> Script:
    """``NAME=FILE`` from ``--script``: a benchmark script outside benchmarks/."""
    name, sep, file = spec.partition("=")
    if not sep or not name or not file:
        raise argparse.ArgumentTypeError(f"--script wants NAME=FILE, got {spec!r}")
    return Script(name, "", file=Path(file).resolve(), needs_s=(5.0, 5.0), adapter="section")


def to_json(result: dict[str, Any]) -> dict[str, Any]:
    return {
        "machine": result["machine"],
        "quick": result["quick"],
        "wall_s": result["wall_s"],
        "rows": [r.to_dict() for o in result["outcomes"] for r in o.rows],
        "scripts": {
            o.script.name: {
                "status": o.status,
                "seconds": round(o.seconds, 1),
                "note": o.note,
                "notes": o.notes,
                "data": o.data,
                "text": o.text,
            }
            for o in result["outcomes"]
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="a ~2 minute smoke run")
    parser.add_argument("--json", type=Path, default=None, help="write every result to FILE")
    parser.add_argument("--gpu", action="store_true", help="the GPU table (benchmarks/gpu.py)")
    parser.add_argument("--only", default="", help="comma list of scripts, e.g. e2e,asr")
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        metavar="S",
        help=f"seconds for the whole run (default: the scripts' estimates x {BUDGET_MARGIN})",
    )
    parser.add_argument(
        "--script",
        type=extra_script,
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="also run FILE as a benchmark script named NAME (prints a Section's JSON)",
    )
    args = parser.parse_args(argv)
    if args.gpu:
        from benchmarks import gpu

        return gpu.main(["--json", str(args.json)] if args.json else [])
    only = [s for s in args.only.split(",") if s] or None
    result = run_all(args.quick, only, args.budget, args.script)
    print(report(result))
    if args.json:
        write_json(args.json, to_json(result))
    failed = [o for o in result["outcomes"] if o.status in ("raised", "overran")]
    return 1 if failed and all(o.status != "ok" for o in result["outcomes"]) else 0


if __name__ == "__main__":
    sys.exit(main())
