"""What each wake-word sensitivity costs: wake words heard and false wakes, per level.

    python -m benchmarks.wake [--seed N] [--per-word 30] [--other 60]

The bundled openwakeword models (okay_nabu, hey_jarvis, alexa) listen to each wake phrase and
each other sentence (chatter and commands that name no wake word), spoken by a voice of every
local TTS engine under a drawn condition (``benchmarks.fresh``: speed, noise, reverberation,
telephone band, tempo) with 2 s of silence before and after; the models are reset before each
file, as a site resets them after a detection, so a late score is its own file's. Each file's
highest score per model gives, for each level of the ESPHome "Wake word sensitivity" select
(``threshold_for`` of the configured 0.5), whether its word woke (wake files) and whether any
word woke (other files: a false wake). Nothing here chose the levels' thresholds: the rule
(halfway to 1, halfway to 0) is fixed; this reports what it does.
"""

from __future__ import annotations

import argparse
import random
import sys
from typing import Any

import numpy as np

from benchmarks.common import Row, ensure_importable, format_table
from benchmarks.fresh import CHATTER_LINES, SPOKEN, draw_condition, render, voices

WAKE_PHRASES = {"okay_nabu": "okay nabu", "hey_jarvis": "hey jarvis", "alexa": "alexa"}
GAP_S = 2.0
THRESHOLD = 0.5  # openwakeword's default, the "moderately" level
AREAS = ["kitchen", "living room", "bedroom", "office", "garage", "hallway"]
DEVICES = ["lamp", "ceiling light", "fan", "heater", "speaker", "blinds", "radio", "kettle"]


def other_sentences(rng: random.Random, count: int) -> list[str]:
    """Chatter and commands, none naming a wake word."""
    templates = list(CHATTER_LINES) + [t for ts in SPOKEN.values() for t in ts]
    fill = {"device": DEVICES, "area": AREAS, "light": DEVICES, "fan": ["fan"],
            "cover": ["blinds"], "media": ["radio"], "lock": ["front door"], "n": ["40"],
            "small": ["5"], "switch": DEVICES, "color": ["red"], "climate": ["heater"],
            "name": DEVICES, "floor": ["upstairs"]}  # fmt: skip
    out = []
    while len(out) < count:
        template = rng.choice(templates)
        try:
            out.append(template.format(**{k: rng.choice(v) for k, v in fill.items()}))
        except (KeyError, IndexError):
            continue
    return out


def to_pipeline(audio: np.ndarray, rate: int) -> bytes:
    """A rendered file (frames, channels) at ``rate`` -> 16 kHz mono 16-bit PCM."""
    from voiced.audio import float_to_pcm16, resample, to_mono

    return float_to_pcm16(resample(to_mono(audio), rate, 16000))


def files(seed: int, per_word: int, other: int) -> list[tuple[str | None, str, bytes]]:
    """(wake word or None, text, audio) for every file, in a shuffled order."""
    rng = random.Random(seed)
    engines = voices()
    jobs: list[tuple[str | None, str]] = [
        (word, phrase) for word, phrase in WAKE_PHRASES.items() for _ in range(per_word)
    ]
    jobs += [(None, text) for text in other_sentences(rng, other)]
    rng.shuffle(jobs)
    out = []
    for index, (word, text) in enumerate(jobs):
        condition = draw_condition(rng, engines)
        audio = render(text, condition, seed * 1000 + index)
        out.append((word, text, to_pipeline(audio, condition.rate)))
    return out


def peak_scores(stage: Any, audio: bytes) -> dict[str, float]:
    """Each model's highest score over ``audio``."""
    peaks = dict.fromkeys(stage.names, 0.0)
    frame = 2560  # 80 ms
    for offset in range(0, len(audio) - frame + 1, frame):
        for embeddings in stage.features.process_streaming(audio[offset : offset + frame]):
            for name, model in zip(stage.names, stage.models, strict=True):
                for score in model.process_streaming(embeddings):
                    peaks[name] = max(peaks[name], float(score))
    return peaks


def measure(seed: int, per_word: int, other: int) -> tuple[list[Row], list[str]]:
    """The rows per level, and the other files that woke a word at the lowest threshold."""
    from voiced_plugins.wake_openwakeword import OpenWakeWord, OpenWakeWordOptions, threshold_for

    from voiced.stages import WAKE_SENSITIVITIES

    stage = OpenWakeWord(OpenWakeWordOptions(models=list(WAKE_PHRASES)))
    stage.load()
    gap = b"\x00\x00" * int(GAP_S * 16000)
    scored = []
    for word, text, audio in files(seed, per_word, other):
        stage.reset()  # as a site does after each detection: no file scores its predecessor
        peaks = peak_scores(stage, gap + audio + gap)  # the trailing gap: its late scores
        scored.append((word, peaks, len(audio) / 32000, text))
    wake = [(word, peaks[word]) for word, peaks, _, _ in scored if word is not None]
    others = [max(peaks.values()) for word, peaks, _, _ in scored if word is None]
    hours = sum(seconds for word, _, seconds, _ in scored if word is None) / 3600
    rows: list[Row] = []
    for level in WAKE_SENSITIVITIES:
        threshold = threshold_for(THRESHOLD, level)
        heard = sum(score >= threshold for _, score in wake)
        false = sum(score >= threshold for score in others)
        rows.append(
            Row("wake", f"{level} sensitive (threshold {threshold:.2f})", "% heard",
                median=100 * heard / len(wake), runs=len(wake),
                note=f"wake words heard {heard}/{len(wake)}; false wakes {false}/{len(others)} "
                f"other files ({false / hours:.1f} per hour of speech)")
        )  # fmt: skip
    lowest = threshold_for(THRESHOLD, "very")
    woke = [f"{max(p.values()):.2f} {text!r}" for word, p, _, text in scored
            if word is None and max(p.values()) >= lowest]  # fmt: skip
    return rows, woke


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--per-word", type=int, default=30, help="files per wake word")
    parser.add_argument("--other", type=int, default=60, help="files with no wake word")
    args = parser.parse_args(argv)
    ensure_importable()
    rows, woke = measure(args.seed, args.per_word, args.other)
    print(format_table(rows))
    for line in woke:
        print(f"  a false wake (peak score, text): {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
