"""ASR latency and real-time factor: voiced's Whisper engines beside a direct faster-whisper call.

End-of-speech -> transcript latency is the time from handing a finished utterance to the
engine to having its text (what a user waits for after they stop talking). Every engine gets
the same Piper-synthesized commands (~2 s, ~5 s, ~20 s) and the same model (bundled Whisper
tiny.en); each is warmed up, then timed N times. The direct call is
``faster_whisper.WhisperModel.transcribe`` with beam 1, as a user of faster-whisper would call it.

    python benchmarks/asr.py [--runs 10] [--engines ct2,ct2-full,hf,hf-full] [--json]
    python benchmarks/asr.py --wer      # encoder-window study: word error rate, full vs fit
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from benchmarks.wer import edit_distance  # noqa: E402

COMMANDS = {
    "2s": "Please turn on the kitchen lights.",
    "5s": "Dim the bedroom lights to a warm glow, close the blinds in the living room, and play "
    "some quiet jazz in the kitchen.",
    "20s": (
        "Good morning. Please turn on the lights in the kitchen and the hallway, start the coffee "
        "machine, open the blinds in the living room, and set the thermostat a little warmer. "
        "Then read me today's calendar, remind me to call my mother this evening, and tell me "
        "whether I need an umbrella when I leave for work. And if the washing machine is done, "
        "let me know before the news starts."
    ),
}

# A small speech test set for the encoder-window study (no digits: "ten" vs "10" is no error).
WER_SENTENCES = [
    "Turn on the kitchen lights.",
    "Set a timer for the pasta.",
    "What's the weather like tomorrow?",
    "Turn off the living room lamp.",
    "Play some jazz in the bedroom.",
    "Stop.",
    "Yes.",
    "Make the thermostat a little warmer.",
    "Open the garage door.",
    "What time is it?",
    "Dim the bedroom lights and close the blinds in the living room.",
    "Add milk, eggs and bread to my shopping list.",
    "Lock the front door.",
    "Is the back door open?",
    "Turn the volume down.",
    "Cancel the alarm.",
    "Good night.",
    "Start the vacuum cleaner in the hallway.",
    "Who is at the front door?",
    "Switch off all the lights downstairs.",
    "Remind me to call my mother tomorrow evening, and don't forget to buy flowers on the way "
    "home from work.",
    "Please tell me a short story about a dragon who lived in a castle by the sea and loved to "
    "read books about the stars.",
]


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]", " ", text.lower()).split()


def word_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    ref = words(reference)
    return edit_distance(ref, words(hypothesis)), len(ref)


def speech(text: str) -> bytes:
    """Piper without its sampling noise (reproducible), with 0.2 s of pre-roll and tail as a
    VAD leaves around an utterance."""
    from speech import steady_piper

    return steady_piper(text)


def make_engines(names: list[str], cache_dir: str, threads: int) -> dict[str, Callable]:
    """name -> transcribe(pcm) callable, each loaded and warmed up."""
    import faster_whisper
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
    from voiced_plugins.asr_whisper.models import bundled_ct2_dir
    from voiced_plugins.asr_whisper.torch_engine import (
        WhisperTransformersAsr,
        WhisperTransformersOptions,
    )

    engines: dict[str, Callable] = {}
    direct = faster_whisper.WhisperModel(
        str(bundled_ct2_dir("tiny.en")), device="cpu", compute_type="int8", cpu_threads=threads
    )

    def direct_call(pcm: bytes) -> str:
        audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
        segments, _ = direct.transcribe(audio, beam_size=1, language="en")
        return " ".join(s.text.strip() for s in segments)

    engines["faster-whisper direct"] = direct_call
    for name in names:
        window = "full" if name.endswith("-full") else "fit"
        if name.startswith("ct2"):
            engine = WhisperCt2Asr(WhisperCt2Options(window=window, cpu_threads=threads))
            label = f"voiced ct2 int8 {window}"
        else:
            engine = WhisperTransformersAsr(
                WhisperTransformersOptions(window=window, cache_dir=cache_dir, cpu_threads=threads)
            )
            label = f"voiced transformers fp32 {window}"
        engine.load()
        engines[label] = lambda pcm, e=engine: e.transcribe(pcm).text
    return engines


def bench(engines: dict[str, Callable], runs: int) -> list[dict]:
    rows = []
    for length, text in COMMANDS.items():
        pcm = speech(text)
        seconds = len(pcm) / 32000
        times: dict[str, list[float]] = {name: [] for name in engines}
        outs = {name: call(pcm) for name, call in engines.items()}  # warm-up on this length
        for _ in range(runs):  # round-robin, so load from elsewhere hits every engine alike
            for name, call in engines.items():
                started = time.perf_counter()
                outs[name] = call(pcm)
                times[name].append(time.perf_counter() - started)
        for name in engines:
            out, took = outs[name], times[name]
            errors, total = word_errors(text, out)
            rows.append(
                {
                    "audio": length,
                    "audio_s": round(seconds, 2),
                    "engine": name,
                    "median_ms": round(statistics.median(took) * 1000, 1),
                    "min_ms": round(min(took) * 1000, 1),
                    "max_ms": round(max(took) * 1000, 1),
                    "rtf": round(statistics.median(took) / seconds, 4),
                    "wer": round(errors / total, 3),
                    "text": out,
                }
            )
    for row in rows:
        direct = next(
            r for r in rows if r["audio"] == row["audio"] and r["engine"] == "faster-whisper direct"
        )
        row["ratio"] = round(row["median_ms"] / direct["median_ms"], 2)
    return rows


def print_table(rows: list[dict]) -> None:
    print(
        f"{'audio':>6} {'engine':32} {'median ms':>10} {'min-max ms':>15} {'RTF':>7} "
        f"{'x direct':>9} {'WER':>5}"
    )
    for r in rows:
        print(
            f"{r['audio']:>6} {r['engine']:32} {r['median_ms']:>10.0f} "
            f"{r['min_ms']:>7.0f}-{r['max_ms']:<7.0f} {r['rtf']:>7.3f} {r['ratio']:>8.2f}x "
            f"{r['wer']:>5.2f}"
        )


def wer_study(cache_dir: str, threads: int) -> list[dict]:
    """Word error rate of full vs fitted encoder windows on Piper and espeak-ng speech."""
    from speech import espeak, silence
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
    from voiced_plugins.asr_whisper.torch_engine import (
        WhisperTransformersAsr,
        WhisperTransformersOptions,
    )

    samples = [(s, speech(s)) for s in WER_SENTENCES] + [
        (s, silence(0.2) + espeak(s) + silence(0.2)) for s in WER_SENTENCES
    ]
    variants = [("full", {"window": "full"})] + [
        (
            f"fit pad {pad:g}s min {low:g}s",
            {"window": "fit", "fit_padding_s": pad, "fit_min_s": low},
        )
        for pad, low in ((1, 3), (1, 5), (2, 5), (3, 8))
    ]
    rows = []
    for engine_name, cls, opts in (
        ("ct2 int8", WhisperCt2Asr, WhisperCt2Options),
        ("transformers fp32", WhisperTransformersAsr, WhisperTransformersOptions),
    ):
        for label, update in variants:
            extra = {"cache_dir": cache_dir} if opts is WhisperTransformersOptions else {}
            engine = cls(opts(cpu_threads=threads, **extra, **update))
            engine.load()
            errors = total = rejected = 0
            times = []
            for sentence, pcm in samples:
                started = time.perf_counter()
                transcript = engine.transcribe(pcm)
                times.append(time.perf_counter() - started)
                e, n = word_errors(sentence, transcript.text)
                errors, total, rejected = errors + e, total + n, rejected + transcript.no_speech
            engine.close()
            row = {
                "engine": engine_name,
                "window": label,
                "wer_pct": round(100 * errors / total, 1),
                "rejected": rejected,
                "median_ms": round(statistics.median(times) * 1000, 1),
                "samples": len(samples),
                "words": total,
            }
            rows.append(row)
            print(
                f"{engine_name:18} {label:22} WER {row['wer_pct']:5.1f}%  rejected "
                f"{rejected}/{len(samples)}  median {row['median_ms']:5.0f} ms",
                flush=True,
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--engines",
        default="ct2,ct2-full,hf,hf-full",
        help="comma list of ct2, ct2-full, hf, hf-full",
    )
    parser.add_argument(
        "--threads", type=int, default=0, help="CPU threads for every engine (0: library default)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--wer", action="store_true", help="run the encoder-window WER study")
    parser.add_argument(
        "--cache-dir",
        default=os.environ.get("VOICED_CACHE_DIR"),
        help="where the transformers engine keeps the converted model",
    )
    args = parser.parse_args()
    if not args.cache_dir:
        from voiced_plugins.asr_whisper.models import default_cache_dir

        args.cache_dir = str(default_cache_dir())
    if args.wer:
        rows = wer_study(args.cache_dir, args.threads)
    else:
        engines = make_engines(
            [e for e in args.engines.split(",") if e], args.cache_dir, args.threads
        )
        rows = bench(engines, args.runs)
        if not args.json:
            print(
                f"CPU: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
                f"model: bundled tiny.en; {args.runs} runs after warm-up; threads "
                f"{args.threads or 'default'}"
            )
            print_table(rows)
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
