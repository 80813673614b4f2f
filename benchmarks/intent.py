"""Intent recognition time per sentence over Home Assistant's conformance suite.

    python benchmarks/intent.py [--suite PATH] [--repeat N]

Rows: voiced's hassil stage (normalization, filler words, best-result ranking, entity
lookup; fuzzy pass only on misses) and, as the peer, raw ``hassil.recognize_best`` on the
same intents and slot lists with no normalization -- so voiced's overhead is visible.
Only sentences the stage matches are timed for the "matches" columns (the 5 ms target).
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import statistics
import time
from pathlib import Path

from hassil import recognize_best
from voiced_plugins.intent_hassil import CUSTOM_SENTENCE, HassilIntent, HassilOptions
from voiced_plugins.intent_hassil.conformance import compare, load_suite

DEFAULT_SUITE = Path(__file__).resolve().parents[2] / "shared" / "conformance" / "ha-intents-en"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=DEFAULT_SUITE)
    parser.add_argument("--repeat", type=int, default=3, help="passes over the suite (best kept)")
    args = parser.parse_args()
    if not (args.suite / "_fixtures.yaml").is_file():
        raise SystemExit(f"no conformance suite at {args.suite} (--suite PATH)")

    stage = HassilIntent(HassilOptions(home="", sentences=[]))
    started = time.perf_counter()
    stage.load()
    load_s = time.perf_counter() - started
    suite = load_suite(args.suite)

    ours: dict[int, float] = {}
    raw: dict[int, float] = {}
    matched: set[int] = set()
    gc.disable()
    for _ in range(args.repeat):
        index = 0
        for home, cases in suite.groups:
            stage.use_home(home)
            for case in cases:
                t0 = time.perf_counter()
                got = stage.recognize(case.sentence, case.context)
                t1 = time.perf_counter()
                recognize_best(
                    case.sentence,
                    stage.intents,
                    intent_context=case.context,
                    language="en",
                    best_metadata_key=CUSTOM_SENTENCE,
                    best_slot_name="name",
                )
                t2 = time.perf_counter()
                ours[index] = min(ours.get(index, 1e9), t1 - t0)
                raw[index] = min(raw.get(index, 1e9), t2 - t1)
                if compare(got, case) is None:
                    matched.add(index)
                index += 1
    gc.enable()

    version = importlib.metadata.version("home-assistant-intents")
    print(f"{len(ours)} sentences, home-assistant-intents {version}, best of {args.repeat} "
          f"passes; stage load {load_s:.2f}s")  # fmt: skip
    print(f"{'recognizer':38} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'n':>6}")
    for label, times, subset in (
        ("voiced hassil stage (matches)", ours, matched),
        ("raw hassil.recognize_best (same)", raw, matched),
        ("voiced hassil stage (all)", ours, set(ours)),
        ("raw hassil.recognize_best (all)", raw, set(raw)),
    ):
        values = sorted(times[i] * 1e3 for i in subset)
        p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
        print(f"{label:38} {statistics.median(values):10.2f} {p95:8.2f} {values[-1]:8.2f} "
              f"{len(values):6d}")  # fmt: skip


if __name__ == "__main__":
    main()
