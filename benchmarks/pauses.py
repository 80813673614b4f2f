"""The early-commit slice: commands spoken with a natural pause inside, and two in a row.

Each item is Piper phrases and pauses (seconds); the expected intents come from hassil on the
whole clean text of each command. A *wrong or premature action* is a handled intent (a run
that got past recognition and was acted on) that is not one of the expected ones, or one
acted on before its command was complete.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import CACHE

FOLDER = CACHE / "pauses"
VERSION = 2  # 2: Piper phrases trimmed of their own edge silence

# (label, parts, commands): parts are phrases and pauses; commands the whole texts expected.
ITEMS: list[tuple[str, list[str | float], list[str]]] = [
    ("area … kind", ["Turn off the kitchen", 0.4, "lights."], ["Turn off the kitchen lights."]),
    (
        "area … kind and more",
        ["Turn off the kitchen", 0.5, "lights and the fan."],
        ["Turn off the kitchen lights and the fan."],
    ),
    (
        "timer … duration",
        ["Set a timer for", 0.5, "five minutes."],
        ["Set a timer for five minutes."],
    ),
    ("verb … name", ["Switch on the", 0.4, "desk lamp."], ["Switch on the desk lamp."]),
    (
        "kind … area",
        ["Turn on the lights", 0.5, "in the living room."],
        ["Turn on the lights in the living room."],
    ),
    ("question … rest", ["What", 0.3, "time is it?"], ["What time is it?"]),
    ("name … pause", ["Turn off the", 0.6, "bedroom fan."], ["Turn off the bedroom fan."]),
    (
        "two in a row",
        ["Turn on the desk lamp.", 1.0, "Turn off the bedroom fan."],
        ["Turn on the desk lamp.", "Turn off the bedroom fan."],
    ),
    ("complete", ["Turn on the TV."], ["Turn on the TV."]),
    (
        "complete … breath … more",  # speculated on (0.1 s), too short to commit (0.25 s)
        ["Turn on the kitchen lights", 0.2, "and the fan."],
        ["Turn on the kitchen lights and the fan."],
    ),
]


def build() -> list[dict[str, Any]]:
    """Render the slice (cached by content under .bench/pauses); its manifest items."""
    from benchmarks.testset import RATE, expected_intent, intent_recognizer, piper
    from voiced.audio import float_to_pcm16, write_wav

    FOLDER.mkdir(parents=True, exist_ok=True)
    recognizer = intent_recognizer()
    items = []
    for index, (label, parts, commands) in enumerate(ITEMS):
        name = f"{index:02d}-v{VERSION}.wav"
        meta = FOLDER / f"{name}.json"
        key = json.dumps([VERSION, parts])
        if not meta.exists() or json.loads(meta.read_text()).get("key") != key:
            audio = [np.zeros(int(0.4 * RATE), np.float32)]
            for part in parts:
                if isinstance(part, float):
                    audio.append(np.zeros(int(part * RATE), np.float32))
                else:
                    audio.append(trimmed(piper(part)))
            speech_s = sum(len(a) for a in audio) / RATE - 0.4
            audio.append(np.zeros(int(1.5 * RATE), np.float32))
            write_wav(FOLDER / name, float_to_pcm16(np.concatenate(audio)))
            meta.write_text(json.dumps({"key": key, "speech_s": speech_s}))
        speech_s = json.loads(meta.read_text())["speech_s"]
        items.append(
            {
                "file": name,
                "label": label,
                "text": " ".join(commands),
                "lead_s": 0.4,
                "speech_s": speech_s,
                "intents": [expected_intent(recognizer, c) for c in commands],
            }
        )
    return items


def trimmed(samples: np.ndarray, level: float = 0.01) -> np.ndarray:
    """A phrase without Piper's own silence at its edges, so a pause is what ITEMS says."""
    loud = np.flatnonzero(np.abs(samples) > level)
    return samples[loud[0] : loud[-1] + 1] if len(loud) else samples


def judge(item: dict[str, Any], runs: list[dict[str, Any]]) -> dict[str, Any]:
    """How the runs of one slice item went: early commits, waits, wrong or premature actions."""
    expected = [i for i in item["intents"] if i is not None]
    wrong = []
    for run in runs:
        handled, intent = run.get("handled"), run.get("intent")
        if handled is None or intent is None:
            continue  # nothing acted on
        got = {"name": intent.data["name"], "slots": intent.data.get("slots", {})}
        if not any(_same(got, want) for want in expected):
            early = run.get("vad-end") is not None and (
                run["vad-end"].data.get("reason") == "early-commit"
            )
            wrong.append({"intent": got, "text": intent.data.get("text", ""), "early": early})
    reasons = [r["vad-end"].data.get("reason") for r in runs if "vad-end" in r]
    return {
        "label": item["label"],
        "early": reasons.count("early-commit"),
        "waited": sum(1 for r in reasons if r != "early-commit"),
        "wrong": wrong,
    }


def _same(got: dict[str, Any], want: dict[str, Any]) -> bool:
    from benchmarks.e2e import intent_matches

    return intent_matches(want, got)


def folder() -> Path:
    return FOLDER


async def run() -> Any:
    """The slice alone, early commit on then off, on one daemon (as benchmarks/e2e.py runs it)."""
    from benchmarks.common import Section
    from benchmarks.e2e import pause_slice, start_daemon

    pipeline, recorder, _load_s, notes = await start_daemon()
    try:
        rows, judged = await pause_slice(pipeline, recorder)
    finally:
        await pipeline.stop()
    section = Section("pauses", notes=notes)
    section.rows = rows
    section.results = {"judged": judged}
    return section


def main(argv: list[str] | None = None) -> int:
    import argparse
    import asyncio

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None, help="write results to this file")
    args = parser.parse_args(argv)
    asyncio.run(run()).report(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
