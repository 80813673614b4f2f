"""CPU use of the idle listening loop (wake word + VAD) and wake-to-listening latency.

    python -m benchmarks.idle_cpu [--seconds 60] [--realtime] [--quick] [--json FILE]

Feeds background noise (low room noise with some speech that holds no wake word) through a
real ``voiced.site.Site`` with the real stages, in 20 ms chunks as a microphone delivers them,
and reports CPU seconds per audio second: the share of one core the loop needs at real time.
Configurations, measured in the same run: openWakeWord with one wake word, with all five
bundled ones, and (the peer) VAD-only listening with webrtc.

Wake-to-listening latency: a "hey jarvis" / "okay nabu" phrase in the same noise; how far after
the end of the phrase (stream time) the wake fires, and the compute time of the chunk that
fired it; the site is listening as soon as that chunk returns.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from benchmarks.common import Row, Section, ensure_importable, format_table, stats  # noqa: E402

ensure_importable()

CHUNK_BYTES = 640  # 20 ms at 16 kHz 16-bit


def background(seconds: float) -> bytes:
    """Room noise with a few sentences of speech (no wake word) mixed in."""
    from speech import piper, silence

    talk = [
        piper("the weather is nice today, let's go for a walk later"),
        piper("did you remember to buy milk and bread at the store"),
    ]
    audio = b""
    while len(audio) < seconds * 32000:
        audio += silence(4.0) + talk[len(audio) % 2] + silence(3.0)
    return with_noise(audio[: int(seconds * 32000)])


def with_noise(audio: bytes, level: float = 0.01) -> bytes:
    import numpy as np
    from speech import noise

    floor = np.frombuffer(noise(len(audio) / 32000 + 0.1, level=level, seed=1), "<i2")
    mixed = np.frombuffer(audio, "<i2").astype(np.int32) + floor[: len(audio) // 2]
    return np.clip(mixed, -32768, 32767).astype("<i2").tobytes()


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def make_site(wake_models: list[str] | None) -> Any:
    from voiced_plugins.vad_webrtc import WebrtcVad, WebrtcVadOptions
    from voiced_plugins.wake_openwakeword import OpenWakeWord, OpenWakeWordOptions

    from voiced.config import ConversationConfig, Settings, VadConfig
    from voiced.run import Run
    from voiced.segmenter import UtteranceSegmenter
    from voiced.site import Site

    vad = WebrtcVad(WebrtcVadOptions())
    vad.load()
    wakes = []
    if wake_models:
        wake = OpenWakeWord(OpenWakeWordOptions(models=wake_models))
        wake.load()
        wakes.append(wake)
    events: list[Any] = []
    services: Any = SimpleNamespace(settings=Settings(), emit=events.append)  # a run without ASR

    async def submit(utterance: Any) -> None:  # no ASR here: finish the run at once
        utterance.run.end("done")

    site = Site(
        "bench", UtteranceSegmenter(vad, VadConfig()), wakes, ConversationConfig(),
        events.append, submit, lambda site_id: Run(services, site_id),
    )  # fmt: skip
    site.events = events
    return site


async def feed(site: Any, audio: bytes, realtime: bool) -> tuple[float, float, list[float]]:
    """(cpu seconds, wall seconds, per-chunk compute seconds) for feeding ``audio``."""
    from voiced.audio import AudioChunk

    per_chunk = []
    cpu0, wall0 = cpu_seconds(), time.perf_counter()
    for index, offset in enumerate(range(0, len(audio), CHUNK_BYTES)):
        started = time.perf_counter()
        await site.feed(AudioChunk(audio[offset : offset + CHUNK_BYTES]))
        per_chunk.append(time.perf_counter() - started)
        if realtime:
            await asyncio.sleep(max(0.0, wall0 + (index + 1) * 0.02 - time.perf_counter()))
    return cpu_seconds() - cpu0, time.perf_counter() - wall0, per_chunk


async def idle_rows(seconds: float, realtime: bool, runs: int) -> list[Row]:
    audio = background(seconds)
    configs = [
        ("wake: openwakeword hey_jarvis (idle: VAD off)", ["hey_jarvis"]),
        ("wake: openwakeword, all 5 bundled words", None),
        ("peer: VAD-only listening (webrtc)", []),
    ]
    from voiced_plugins.wake_openwakeword import BUNDLED

    rows = []
    for what, models in configs:
        site = make_site(list(BUNDLED) if models is None else models)
        shares, chunk_ms = [], []
        await feed(site, audio[: 2 * 32000], realtime=False)  # warm-up: caches, first calls
        for _ in range(runs):
            cpu, _wall, per_chunk = await feed(site, audio, realtime)
            shares.append(100.0 * cpu / seconds)
            chunk_ms += [s * 1000 for s in per_chunk]
        wakes = sum(1 for e in site.events if e.type == "wake")
        rows.append(
            Row.of("idle", f"CPU, {what}", "% of a core", stats(shares),
                   note=f"{seconds:g} s of noise+speech; max chunk "
                        f"{max(chunk_ms):.1f} ms; false wakes {wakes}")
        )  # fmt: skip
    return rows


async def latency_rows(repeats: int) -> list[Row]:
    from speech import piper, silence

    rows = []
    for name, phrase in (("hey_jarvis", "hey jarvis"), ("okay_nabu", "okay nabu")):
        site = make_site([name])
        spoken = piper(phrase)
        delays, computes = [], []
        for _ in range(repeats):
            audio = with_noise(silence(1.0) + spoken + silence(1.5))
            phrase_end = (len(silence(1.0)) + len(spoken)) / 32000
            before = len(site.events)
            start_clock = site.clock
            _, _, per_chunk = await feed(site, audio, realtime=False)
            wake = next((e for e in site.events[before:] if e.type == "wake"), None)
            if wake is None:
                continue
            fired = wake.data["stream_time"] - start_clock
            delays.append(fired - phrase_end)
            computes.append(per_chunk[round(fired / 0.02) - 1])
            site.cancel("bench")
        if delays:
            rows.append(
                Row.of(
                    "wake",
                    f"wake fires after the end of '{phrase}'",
                    "ms",
                    stats(delays),
                    note="stream time; the site listens from then",
                )
            )
            rows.append(Row.of("wake", f"compute of the chunk that fired ({name})", "ms",
                               stats(computes)))  # fmt: skip
        else:
            rows.append(Row("wake", f"'{phrase}' was not detected", "-", note="check the model"))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="audio per configuration")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--realtime", action="store_true", help="feed at real-time pace")
    parser.add_argument("--quick", action="store_true", help="fewer latency repeats")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE")
    args = parser.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.WARNING)
    section = Section("idle_cpu")

    async def run() -> None:
        section.rows += await idle_rows(args.seconds, args.realtime, args.runs)
        section.rows += await latency_rows(2 if args.quick else 5)

    asyncio.run(run())
    section.notes.append("target: under 15% of one core for the idle loop")
    print(format_table(section.rows))
    if args.json:
        import json

        args.json.write_text(json.dumps(section.to_dict(), indent=2))


if __name__ == "__main__":
    main()
