"""Spoken commands -> intents: voiced beside the naive peer, per technique, per budget.

    python -m benchmarks.recognition [--set heldout|tuning|fresh[,...]] [--seed N[,N...]]
        [--only ROW,ROW] [--curve SCALE[,...]] [--stretch K] [--json]

The sets (built when missing): ``heldout`` (benchmarks/testset.py ``build_heldout``: a home of
its own; it helped choose some constants, docs/asr.md "Tuned constants"), ``tuning``
(``build_tuning``, the repo's own home, where ideas are judged first) and ``fresh``
(benchmarks/fresh.py: a new home, commands, chatter and conditions per ``--seed``; what nothing
was tuned on). Every row reads the same files with the same model (bundled tiny.en,
CTranslate2 int8, CPU; one row base):

- peer: faster-whisper ``transcribe`` (greedy, language en) + plain ``hassil.recognize_best``
  with the same templates and home, no normalization;
- ``voiced: default``: the whisper-ctranslate2 engine as shipped and the hassil stage;
  ``voiced: budget none`` / ``budget X s``: the default with that anytime budget
  (``recognition.budget_s``; ``--stretch K`` multiplies them, for a machine K times slower
  than the quiet one they are meant for); ``voiced: recognition = free``: the free profile;
- the technique ladder, one technique added per row (templates only -> + name snapping -> +
  N-best -> + prompted retry -> + sentence repair -> + rescoring -> + constrained decoding
  -> + the 1.5 limit -> + surface forms -> + the 2.0 limit -> + one template, beam 12 -> +
  first words -> + beam 24 -> + names heard are kept), the second look in the full window,
  the full 30 s window, and Whisper base (``bundled:base``, language pinned to en).

A command is right when the intent name, every expected slot and the set of entities it acts
on are right; chatter and no-speech files must give no intent (else: a false activation).
Latency is audio in -> intent out (the whole utterance is there: end of speech -> intent),
wall time and this process's CPU time, with the load average at start and end. ``--curve``
replays the budget curve from the ``budget none`` row (benchmarks/budget_curve.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import ensure_importable, stats


@dataclass
class Row:
    label: str
    right: int = 0
    commands: int = 0
    clean_right: int = 0
    clean: int = 0
    wrong: int = 0  # a command read as another action
    false_activations: int = 0
    idle: int = 0  # chatter + no-speech files
    latencies_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    """This process's CPU time per utterance (every thread's): what load on the shared machine
    does not stretch, unlike the wall time."""
    misses: list[str] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)
    """Per file: kind, verdict, wall ms, the recognizer's steps and their ms, the step that
    decided and the verdict of the reading before the home's steps (budget_curve.py)."""

    def table_cells(self) -> list[str]:
        lat = stats(self.latencies_ms) if self.latencies_ms else {}
        cpu = stats(self.cpu_ms) if self.cpu_ms else {}

        def cell(key: str, of: dict[str, Any] = lat) -> str:
            value = of.get(key)
            return "-" if value is None else f"{value:.0f}"

        return [
            self.label,
            f"{self.right}/{self.commands} {self.right / max(1, self.commands):.1%}",
            f"{self.clean_right}/{self.clean} {self.clean_right / max(1, self.clean):.1%}",
            str(self.wrong),
            f"{self.false_activations}/{self.idle}",
            cell("median"),
            cell("p90"),
            cell("p99"),
            cell("max"),
            cell("median", cpu),
            cell("p90", cpu),
            str(len(self.latencies_ms)),
        ]


class App:
    """The daemon's stage lookup, all the ASR engine asks of it."""

    def __init__(self, intent: Any) -> None:
        self.intent = intent

    def stage(self, kind: str, name: str | None = None) -> Any:
        return self.intent if kind == "intent" else None


def pipeline_audio(path: str) -> bytes:
    from voiced.audio import float_to_pcm16, read_audio_file, resample, to_mono

    data, rate = read_audio_file(path)
    return float_to_pcm16(resample(to_mono(data), rate, 16000))


def judge(intent: Any, expected: dict[str, Any] | None) -> str:
    """'right', 'wrong' (another action), 'miss' (nothing) or 'false' (an intent from
    chatter or no speech)."""
    if expected is None:
        return "right" if intent is None else "false"
    if intent is None:
        return "miss"
    if intent.name != expected["name"]:
        return "wrong"
    for key, value in expected["slots"].items():
        if str(intent.slots.get(key)) != str(value):
            return "wrong"
    if sorted(intent.data.get("entities", [])) != expected["entities"]:
        return "wrong"
    return "right"


BUDGETS = (0.25, 0.5, 0.75, 1.0, 1.5, 2.0)
"""The anytime budgets the curve is measured at (``voiced: budget ...`` rows)."""


def load_sets(names: list[str], seeds: list[int]) -> list[tuple[str, dict[str, Any], Any]]:
    """(label, manifest, folder) of each set asked for; ``fresh`` once per seed."""
    from benchmarks import testset

    sets = []
    for name in names:
        if name == "tuning":
            sets.append(("tuning", testset.build_tuning(), testset.TUNING_DIR))
        elif name == "heldout":
            sets.append(("heldout", testset.build_heldout(), testset.HELDOUT_DIR))
        elif name == "fresh":
            from benchmarks import fresh

            if not seeds:
                raise SystemExit("--set fresh needs --seed N[,N...]")
            for seed in seeds:
                manifest = fresh.build(seed)
                sets.append((f"fresh-{seed}", manifest, fresh.folder(seed)))
        else:
            raise SystemExit(f"unknown set {name!r}: heldout, tuning or fresh")
    return sets


def intent_stages(home: dict[str, Any]) -> dict[tuple[bool, bool], Any]:
    """The hassil stage over ``home``: (fuzzy, repair) -> stage."""
    from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

    stages = {}
    for fuzzy, repair in ((False, False), (True, False), (True, True)):
        stage = HassilIntent(HassilOptions(home="", sentences=[], fuzzy=fuzzy, repair=repair))
        stage.load()
        stage.use_home(home)
        stages[fuzzy, repair] = stage
    return stages


def peer_runner(stage: Any) -> Callable[[bytes], Any]:
    """faster-whisper ``transcribe`` (greedy, en) + plain ``hassil.recognize_best``."""
    from faster_whisper import WhisperModel
    from hassil import recognize_best
    from voiced_plugins.asr_whisper.models import bundled_ct2_dir
    from voiced_plugins.intent_hassil import CUSTOM_SENTENCE

    model = WhisperModel(str(bundled_ct2_dir("tiny.en")), device="cpu", compute_type="int8")

    def peer(audio: bytes) -> Any:
        samples = np.frombuffer(audio, "<i2").astype(np.float32) / 32768.0
        segments, _ = model.transcribe(samples, beam_size=1, language="en")
        text = " ".join(s.text.strip() for s in segments).strip()
        result = recognize_best(
            text, stage.intents, language="en", best_metadata_key=CUSTOM_SENTENCE,
            best_slot_name="name",
        )  # fmt: skip
        return text, stage._to_intent(text, result, 1.0) if result is not None else None, None

    return peer


def on_torch(stage: Any, device: str, **options: Any) -> Any:
    """The default recognizer on whisper-transformers (torch, float32 on the CPU)."""
    from voiced_plugins.asr_whisper.torch_engine import (
        WhisperTransformersAsr,
        WhisperTransformersOptions,
    )

    engine = WhisperTransformersAsr(
        WhisperTransformersOptions(device=device, when_no_gpu="cpu", **options), App(stage)
    )
    engine.load()
    return engine_runner(engine, stage)


def engine_runner(engine: Any, stage: Any) -> Callable[[bytes], Any]:
    """``run(audio) -> (text, intent, transcript)``: ``engine`` hears, ``stage`` recognizes."""

    def run(audio: bytes) -> Any:
        transcript = engine.transcribe(audio)
        if transcript.no_speech or not transcript.text.strip():
            return transcript.text, None, transcript
        return transcript.text, stage.recognize(transcript.text), transcript

    run.stage = stage  # type: ignore[attr-defined]
    return run


def row_makers(
    stages: dict[tuple[bool, bool], Any],
    stretch: float = 1.0,
    device: str = "cpu",
    threads: int = 0,
) -> dict[str, Callable[[], Any]]:
    """Every row's label -> a maker of its ``run(audio) -> (text, intent, transcript)``;
    ``stretch``: the budget rows' budgets are multiplied by it (a machine that many times
    slower than the one the budgets are meant for); ``device``, ``threads``: the
    whisper-transformers row's."""
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options

    def voiced(
        fuzzy: bool,
        repair: bool = True,
        engine_options: Any = None,
        ct2_steps: bool = False,
        **switches: Any,
    ) -> Any:
        """The engine with ``switches`` under ``recognition`` and ``engine_options`` beside;
        ``ct2_steps``: the search's steps on CTranslate2's ``generate`` (as before ct2_steps.py)."""
        stage = stages[fuzzy, repair]
        options = WhisperCt2Options(**(engine_options or {}), recognition=switches)
        engine = WhisperCt2Asr(options, App(stage))
        engine.load()
        if ct2_steps:
            engine._steps = None  # the row that compares the two
        return engine_runner(engine, stage)

    before = {"rescore_names": False}  # the rows before that guard
    graph_search = {
        "search_one_template": False,
        "search_beam": 6,
        "search_first_words": False,
        **before,
    }
    rows = {
        "peer: faster-whisper + plain hassil": lambda: peer_runner(stages[False, False]),
        "voiced: default": lambda: voiced(True, True),
        "voiced: default, search steps on CTranslate2": lambda: voiced(True, True, ct2_steps=True),
        "voiced: budget none": lambda: voiced(True, True, budget_s=None),
        **{
            f"voiced: budget {budget} s": lambda budget=budget: voiced(
                True, True, budget_s=budget * stretch
            )
            for budget in BUDGETS
        },
        "voiced: recognition = free": lambda: voiced(True, True, profile="free"),
        "voiced: templates only": lambda: voiced(
            False, False, hypotheses=1, retry=False, rescore=False
        ),
        "voiced: + name snapping": lambda: voiced(
            True, False, hypotheses=1, retry=False, rescore=False
        ),
        "voiced: + N-best (3)": lambda: voiced(True, False, retry=False, rescore=False),
        "voiced: + prompted retry": lambda: voiced(True, False, rescore=False),
        "voiced: + sentence repair (text)": lambda: voiced(True, True, rescore=False),
        "voiced: + home rescoring": lambda: voiced(
            True, True, constrained=False, rescore_drop=0.8, rescore_forms=False, **before
        ),
        "voiced: + constrained decoding (0.8 limit)": lambda: voiced(
            True, True, rescore_drop=0.8, rescore_forms=False, **graph_search
        ),
        "voiced: + 1.5 limit on the first look": lambda: voiced(
            True, True, rescore_drop=1.5, rescore_forms=False, **graph_search
        ),
        "voiced: + surface forms (1.5 limit)": lambda: voiced(
            True, True, rescore_drop=1.5, **graph_search
        ),
        "voiced: + surface forms, 2.0 limit": lambda: voiced(True, True, **graph_search),
        "voiced: + search within one template, beam 12": lambda: voiced(
            True, True, search_first_words=False, search_beam=12, **before
        ),
        "voiced: + first words that make a command": lambda: voiced(
            True, True, search_beam=12, **before
        ),
        "voiced: + search beam 24": lambda: voiced(True, True, **before),
        "voiced: + names heard are kept": lambda: voiced(True, True),
        "voiced: default + second look, full window": lambda: voiced(True, True, rescore_full=True),
        "voiced: default, window=full": lambda: voiced(True, True, {"window": "full"}),
        "voiced: default, model=bundled:base (en)": lambda: voiced(
            True, True, {"model": "bundled:base", "language": "en"}
        ),
        "voiced: default, compute_type=float32": lambda: voiced(
            True, True, {"compute_type": "float32"}
        ),
        f"voiced: default on whisper-transformers ({device})": lambda: on_torch(
            stages[True, True], device, cpu_threads=threads
        ),
    }
    return rows


def measure(label: str, run: Callable[[bytes], Any], files: list[tuple[dict, bytes]]) -> Row:
    """One row: every file through ``run``, judged, timed (wall and this process's CPU)."""
    run(files[0][1])  # warm up caches
    row = Row(label)
    for item, audio in files:
        started, cpu = time.perf_counter(), time.process_time()
        text, intent, transcript = run(audio)
        row.latencies_ms.append((time.perf_counter() - started) * 1000)
        row.cpu_ms.append((time.process_time() - cpu) * 1000)
        verdict = judge(intent, item["expected"])
        row.files.append(file_record(item, verdict, row.latencies_ms[-1], transcript, run))
        if item["kind"] == "command":
            row.commands += 1
            clean = item["snr_db"] is None
            row.clean += clean
            if verdict == "right":
                row.right += 1
                row.clean_right += clean
            else:
                row.wrong += verdict == "wrong"
                got = f"{intent.name} {intent.data.get('entities')}" if intent else "-"
                row.misses.append(f"{item['file']}: {item['text']!r} heard {text!r} -> {got}")
        else:
            row.idle += 1
            if verdict == "false":
                row.false_activations += 1
                row.misses.append(f"FALSE {item['file']}: heard {text!r} -> {intent.name}")
    return row


def file_record(
    item: dict[str, Any], verdict: str, ms: float, transcript: Any, run: Any
) -> dict[str, Any]:
    """What budget_curve.py needs of one file: its verdict and time, the steps run, the step
    that decided and the verdict of the free reading (the one kept when that step is cut);
    the free reading and what the rescoring found, with their scores (or why it took none)."""
    record: dict[str, Any] = {"file": item["file"], "kind": item["kind"], "verdict": verdict,
                              "ms": round(ms, 1)}  # fmt: skip
    decision = (transcript.data.get("decision") if transcript is not None else None) or {}
    if decision:
        record["decided"] = decision["step"]
        record["steps"] = [(s["step"], s["ms"]) for s in decision["steps"]]
        record["transcript_ms"] = transcript.data["timings_ms"]["total"]
        free = (transcript.data.get("hypotheses") or [{"text": ""}])[0]["text"]
        heard = free.strip() and not transcript.data.get("rejected")
        intent = run.stage.recognize(free) if heard else None
        record["free_verdict"] = judge(intent, item["expected"])
        record["free"] = free
        rescored = transcript.data.get("rescored") or {}
        if "text" in rescored:
            record["rescored"] = {k: rescored[k] for k in ("text", "score", "free_score")}
        elif "why" in rescored:
            record["unrescored"] = rescored["why"]
    return record


HEADER = ["set", "row", "intent right (all)", "clean", "wrong", "false act.", "p50 ms", "p90 ms",
          "p99 ms", "max ms", "cpu p50", "cpu p90", "n"]  # fmt: skip


def print_table(results: list[tuple[str, Row]]) -> None:
    table = [HEADER] + [[name, *row.table_cells()] for name, row in results]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))


def totals(results: list[tuple[str, Row]]) -> list[tuple[str, Row]]:
    """Each row summed over the sets (when there are several)."""
    summed: dict[str, Row] = {}
    for _, row in results:
        total = summed.setdefault(row.label, Row(row.label))
        for key in ("right", "commands", "clean_right", "clean", "wrong", "false_activations",
                    "idle"):  # fmt: skip
            setattr(total, key, getattr(total, key) + getattr(row, key))
        total.latencies_ms += row.latencies_ms
        total.cpu_ms += row.cpu_ms
    return [("all", row) for row in summed.values()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma list of row labels (prefixes)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    parser.add_argument(
        "--set", default="heldout", help="comma list of heldout, tuning, fresh (default heldout)"
    )
    parser.add_argument("--seed", default="", help="comma list of fresh sets' seeds")
    parser.add_argument(
        "--curve",
        default="",
        help="comma list of scales: the budget curve replayed from the 'voiced: budget none' "
        "row at each (1: as measured; 0.5: a machine twice as fast) (budget_curve.py)",
    )
    parser.add_argument(
        "--device", default="cpu", help="whisper-transformers' device (cpu, cuda, cuda:N)"
    )
    parser.add_argument(
        "--torch-threads", type=int, default=0, help="whisper-transformers' cpu_threads"
    )
    parser.add_argument(
        "--stretch",
        type=float,
        default=1.0,
        help="multiply the budget rows' budgets (a loaded machine N times slower than quiet)",
    )
    args = parser.parse_args(argv)
    ensure_importable()
    sets = load_sets(listed(args.set), [int(s) for s in listed(args.seed)])
    print(f"load average at start: {load_average()}", flush=True)
    if args.stretch != 1.0:
        print(f"budget rows: each budget x{args.stretch:g} (a machine that much slower)")
    results = run_sets(sets, listed(args.only), args.stretch, args.device, args.torch_threads)
    print(f"load average at the end: {load_average()}; int8 CPU, tiny.en or as named")
    print_table(results + (totals(results) if len(sets) > 1 else []))
    for scale in listed(args.curve):
        print_curves(results, float(scale))
    for name, row in results:
        print(f"\n{name}: {row.label}: misses")
        for miss in row.misses:
            print(f"  {miss}")
    if args.json:
        print(json.dumps([{"set": n, **r.__dict__} for n, r in results], default=str))
    return 0


def chosen(label: str, asked: str, labels: Any) -> bool:
    """Whether ``--only``'s ``asked`` picks the row ``label``: a whole label picks that row
    alone ("voiced: default"), anything else every row it starts or is in."""
    if asked in labels:
        return label == asked
    return label.startswith(asked) or asked in label


def listed(text: str) -> list[str]:
    """The items of a comma list."""
    return [item.strip() for item in text.split(",") if item.strip()]


def run_sets(
    sets: list[tuple[str, dict[str, Any], Any]],
    only: list[str],
    stretch: float = 1.0,
    device: str = "cpu",
    threads: int = 0,
) -> list[tuple[str, Row]]:
    """Every row asked for (``only``: labels or their prefixes) on every set."""
    results: list[tuple[str, Row]] = []
    for name, manifest, root in sets:
        files = [(item, pipeline_audio(str(root / item["file"]))) for item in manifest["items"]]
        commands = sum(i["kind"] == "command" for i in manifest["items"])
        print(f"{name} set: {len(files)} files ({commands} commands, "
              f"{len(files) - commands} chatter/no-speech)", flush=True)  # fmt: skip
        makers = row_makers(intent_stages(manifest["home"]), stretch, device, threads)
        for label, make in makers.items():
            if only and not any(chosen(label, o, makers) for o in only):
                continue
            results.append((name, measure(label, make(), files)))
            cells = "  ".join(results[-1][1].table_cells())
            print(f"# {name}: {cells} (load {load_average()})", file=sys.stderr, flush=True)
    return results


def print_curves(results: list[tuple[str, Row]], scale: float) -> None:
    """The budget curve of each set, replayed from its row without a budget."""
    from benchmarks import budget_curve

    budgets: list[float | None] = [None, *BUDGETS, 3.0]
    for name, row in results:
        if row.label == "voiced: budget none":
            print(f"\n{name}: budget curve replayed from '{row.label}', times x{scale:g}")
            print(budget_curve.table(row.files, budgets, scale))


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
