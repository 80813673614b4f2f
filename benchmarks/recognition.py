"""Spoken commands -> intents on the held-out set: voiced beside the naive peer, per technique.

    python -m benchmarks.recognition [--set heldout|tuning] [--only ROW,ROW] [--json]

The set (benchmarks/testset.py ``build_heldout``; ``--set tuning``: ``build_tuning``, the
repo's own home, where ideas are judged before the held-out set is read) is built when
missing. Every row reads the
same files with the same model (bundled tiny.en, CTranslate2 int8, CPU; one row base):

- peer: faster-whisper ``transcribe`` (greedy, language en) + plain ``hassil.recognize_best``
  with the same templates and home, no normalization;
- voiced rows: the whisper-ctranslate2 engine and the hassil stage, adding one technique per
  row (templates only -> + name snapping -> + N-best -> + prompted retry -> + sentence
  repair of misheard command words -> + rescoring the home's nearby sentences against the
  audio -> + decoding within the home's sentences (constrained.py), its commands rescored
  too -> + the first look's limit widened from 0.8 to 1.5 a token -> + each candidate scored
  in its best surface form, as Whisper writes (rescore.py ``surface_forms``) -> + the limit
  at 2.0 -> + the search kept to sentences of one template, 12 readings a step = the
  default; the rows before it search the graph's pairs, 6 a step), the
  default with a second look in the full window after the prompted retry (rescoring and the
  search there, 0.8 limit; ``home_rescore_full``), the default with the full 30 s window,
  the default with Whisper
  base (``bundled:base``, multilingual, language pinned to en) instead of tiny.en, and the
  default with CTranslate2 in float32 instead of int8, and the default on the other engine,
  whisper-transformers (the same tiny.en converted, torch float32 on the CPU; ``--device
  cuda`` puts it on a GPU, ``--torch-threads`` sets its CPU threads).

A command is right when the intent name, every expected slot and the set of entities it acts
on are right; chatter and no-speech files must give no intent (else: a false activation).
Latency is audio in -> intent out (the whole utterance is there: end of speech -> intent).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field
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
    misses: list[str] = field(default_factory=list)

    def table_cells(self) -> list[str]:
        lat = stats(self.latencies_ms) if self.latencies_ms else {}

        def cell(key: str) -> str:
            value = lat.get(key)
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

    def run(audio: bytes) -> Any:
        transcript = engine.transcribe(audio)
        if transcript.no_speech or not transcript.text.strip():
            return transcript.text, None
        return transcript.text, stage.recognize(transcript.text)

    return run


def score(label: str, run: Any, files: list[tuple[dict[str, Any], bytes]]) -> Row:
    """One row: ``run`` (audio -> (text, intent)) on every file, judged and timed."""
    run(files[0][1])  # warm up caches
    row = Row(label)
    for item, audio in files:
        started = time.perf_counter()
        text, intent = run(audio)
        row.latencies_ms.append((time.perf_counter() - started) * 1000)
        verdict = judge(intent, item["expected"])
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


def print_table(name: str, manifest: dict[str, Any], results: list[Row], as_json: bool) -> None:
    """The rows as a table, each row's misses, and the rows as JSON when asked."""
    files = len(manifest["items"])
    commands = sum(i["kind"] == "command" for i in manifest["items"])
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{name} set: {files} files ({commands} commands, {files - commands} chatter/"
          f"no-speech), int8 CPU, tiny.en or as named; load average {load}")  # fmt: skip
    header = [
        "row",
        "intent right (all)",
        "clean",
        "wrong",
        "false act.",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "n",
    ]
    table = [header] + [r.table_cells() for r in results]
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))
    for row in results:
        print(f"\n{row.label}: misses")
        for miss in row.misses:
            print(f"  {miss}")
    if as_json:
        print(json.dumps([r.__dict__ for r in results], default=str))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma list of row labels (prefixes)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON too")
    parser.add_argument("--set", choices=("heldout", "tuning"), default="heldout")
    parser.add_argument(
        "--device", default="cpu", help="whisper-transformers' device (cpu, cuda, cuda:N)"
    )
    parser.add_argument(
        "--torch-threads", type=int, default=0, help="whisper-transformers' cpu_threads"
    )
    args = parser.parse_args(argv)
    ensure_importable()
    from faster_whisper import WhisperModel
    from hassil import recognize_best
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
    from voiced_plugins.asr_whisper.models import bundled_ct2_dir
    from voiced_plugins.intent_hassil import CUSTOM_SENTENCE, HassilIntent, HassilOptions

    from benchmarks import testset

    if args.set == "tuning":
        manifest, root = testset.build_tuning(), testset.TUNING_DIR
    else:
        manifest, root = testset.build_heldout(), testset.HELDOUT_DIR
    files = [(item, pipeline_audio(str(root / item["file"]))) for item in manifest["items"]]

    stages = {}
    for fuzzy, repair in ((False, False), (True, False), (True, True)):
        stage = HassilIntent(HassilOptions(home="", sentences=[], fuzzy=fuzzy, repair=repair))
        stage.load()
        stage.use_home(manifest["home"])
        stages[fuzzy, repair] = stage

    peer_model = WhisperModel(str(bundled_ct2_dir("tiny.en")), device="cpu", compute_type="int8")

    def peer(audio: bytes) -> Any:
        samples = np.frombuffer(audio, "<i2").astype(np.float32) / 32768.0
        segments, _ = peer_model.transcribe(samples, beam_size=1, language="en")
        text = " ".join(s.text.strip() for s in segments).strip()
        stage = stages[False, False]
        result = recognize_best(
            text, stage.intents, language="en", best_metadata_key=CUSTOM_SENTENCE,
            best_slot_name="name",
        )  # fmt: skip
        return text, stage._to_intent(text, result, 1.0) if result is not None else None

    def voiced(fuzzy: bool, repair: bool = True, **options: Any) -> Any:
        stage = stages[fuzzy, repair]
        engine = WhisperCt2Asr(WhisperCt2Options(**options), App(stage))
        engine.load()

        def run(audio: bytes) -> Any:
            transcript = engine.transcribe(audio)
            if transcript.no_speech or not transcript.text.strip():
                return transcript.text, None
            return transcript.text, stage.recognize(transcript.text)

        return run

    before = {"home_rescore_names": False}  # the rows before that guard
    graph_search = {
        "home_search_one_template": False,
        "home_search_beam": 6,
        "home_search_first_words": False,
        **before,
    }
    rows = {
        "peer: faster-whisper + plain hassil": lambda: peer,
        "voiced: templates only": lambda: voiced(
            False, False, hypotheses=1, home_retry=False, home_rescore=False
        ),
        "voiced: + name snapping": lambda: voiced(
            True, False, hypotheses=1, home_retry=False, home_rescore=False
        ),
        "voiced: + N-best (3)": lambda: voiced(True, False, home_retry=False, home_rescore=False),
        "voiced: + prompted retry": lambda: voiced(True, False, home_rescore=False),
        "voiced: + sentence repair (text)": lambda: voiced(True, True, home_rescore=False),
        "voiced: + home rescoring": lambda: voiced(
            True,
            True,
            home_constrained=False,
            home_rescore_drop=0.8,
            home_rescore_forms=False,
            **before,
        ),
        "voiced: + constrained decoding (0.8 limit)": lambda: voiced(
            True, True, home_rescore_drop=0.8, home_rescore_forms=False, **graph_search
        ),
        "voiced: + 1.5 limit on the first look": lambda: voiced(
            True, True, home_rescore_drop=1.5, home_rescore_forms=False, **graph_search
        ),
        "voiced: + surface forms (1.5 limit)": lambda: voiced(
            True, True, home_rescore_drop=1.5, **graph_search
        ),
        "voiced: + surface forms, 2.0 limit": lambda: voiced(True, True, **graph_search),
        "voiced: + search within one template, beam 12": lambda: voiced(
            True, True, home_search_first_words=False, home_search_beam=12, **before
        ),
        "voiced: + first words that make a command": lambda: voiced(
            True, True, home_search_beam=12, **before
        ),
        "voiced: + search beam 24": lambda: voiced(True, True, **before),
        "voiced: + names heard are kept (default)": lambda: voiced(True, True),
        "voiced: default + second look, full window": lambda: voiced(
            True, True, home_rescore_full=True
        ),
        "voiced: default, window=full": lambda: voiced(True, True, window="full"),
        "voiced: default, model=bundled:base (en)": lambda: voiced(
            True, True, model="bundled:base", language="en"
        ),
        "voiced: default, compute_type=float32": lambda: voiced(True, True, compute_type="float32"),
        f"voiced: default on whisper-transformers ({args.device})": lambda: on_torch(
            stages[True, True], args.device, cpu_threads=args.torch_threads
        ),
    }
    only = [o.strip() for o in args.only.split(",") if o.strip()]
    results = []
    for label, make in rows.items():
        if only and not any(label.startswith(o) or o in label for o in only):
            continue
        row = score(label, make(), files)
        results.append(row)
        print(f"# {label}: done", file=sys.stderr, flush=True)

    print_table(args.set, manifest, results, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
