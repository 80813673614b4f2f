"""Throughput with N concurrent sites (N = 1, 2, 4) on this machine.

One daemon (the same stages as benchmarks/e2e.py), N file sources with distinct site ids, all
speaking the same playlist of test commands at real-time pace, starting together (the worst
case: every room talks at once). Per N: runs answered per minute of wall time (ideal: every
command answered at the pace of the audio), how many commands were answered, and the latency from
vad-end to the first answer audio, as a median over every run and as growth vs N=1.

    python -m benchmarks.concurrency [--quick] [--sites 1,2,4] [--commands 6] [--json FILE]
    python -m benchmarks.concurrency --pool [--sites 1,2,4,8] [--workers 1,2,3] [--rounds 2]

``--pool``: the same question for the ASR worker pool on an MQTT broker (benchmarks/pool.py).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import CACHE, Row, Section, stats
from benchmarks.e2e import run_timing, runs_of, start_daemon


def playlist(items: list[dict[str, Any]], folder: Path, out: Path) -> tuple[Path, float]:
    """The test files one after another in one 16 kHz WAV (each keeps its own silences)."""
    from voiced.audio import PIPELINE_FORMAT, read_pipeline_audio, write_wav

    pcm = b"".join(read_pipeline_audio(folder / item["file"]) for item in items)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_wav(out, pcm)
    return out, len(pcm) / PIPELINE_FORMAT.bytes_per_second


async def one_level(pipeline: Any, recorder: Any, sites: int, path: Path, expected: int) -> dict:
    from benchmarks.e2e import file_source

    first = len(recorder.events)
    ids = [f"site{sites}-{i}" for i in range(sites)]
    started = time.perf_counter()
    await asyncio.gather(*(pipeline.run_site(file_source(pipeline, path, s)) for s in ids))
    await pipeline.drain()
    wall = time.perf_counter() - started
    events = recorder.events[first:]
    timings = []
    for site in ids:
        for run in runs_of(events, site).values():
            timing = run_timing(run)
            if timing.get("to_first_audio") is not None:
                timings.append(timing)
    dropped = sum(1 for e in events if e.type == "error" and e.data.get("stage") == "asr-queue")
    return {
        "sites": sites,
        "wall_s": wall,
        "answered": len(timings),
        "expected": expected * sites,
        "runs_per_min": 60 * len(timings) / wall,
        "first_audio_s": [t["to_first_audio"] for t in timings],
        "transcript_s": [t["to_transcript"] for t in timings if t["to_transcript"] is not None],
        "dropped": dropped,
    }


async def run(levels: list[int], commands: int, asr_workers: int = 1) -> Section:
    from benchmarks import testset

    manifest = testset.build(testset.DEFAULT_DIR)
    # Commands with an expected intent, so every one should get a real answer.
    items = [i for i in manifest["items"] if i.get("intent")][:commands]
    path, audio_s = playlist(items, testset.DEFAULT_DIR, CACHE / "concurrency" / "playlist.wav")
    pipeline, recorder, _load_s, notes = await start_daemon(pipeline={"asr_workers": asr_workers})
    section = Section("concurrency", notes=notes)
    results = []
    try:
        await one_level(pipeline, recorder, 1, path, len(items))  # warm-up
        for n in levels:
            result = await one_level(pipeline, recorder, n, path, len(items))
            results.append(result)
            print(
                f"  concurrency N={n}: {result['answered']}/{result['expected']} answered in "
                f"{result['wall_s']:.1f} s",
                file=sys.stderr,
            )
    finally:
        await pipeline.stop()
    base = next((r for r in results if r["sites"] == 1), results[0])
    base_latency = stats(base["first_audio_s"])["median"] if base["first_audio_s"] else None
    for r in results:
        n = r["sites"]
        note = f"{r['answered']}/{r['expected']} commands answered"
        if r["dropped"]:
            note += f", {r['dropped']} dropped (ASR queue full)"
        ideal = 60 * r["expected"] / audio_s  # every command answered, at audio pace
        section.rows.append(
            Row(
                "concurrency",
                f"N={n} sites: runs answered per minute (ideal {ideal:.1f})",
                "runs/min",
                round(r["runs_per_min"], 1),
                runs=r["answered"],
                note=note,
            )
        )
        if r["first_audio_s"]:
            summary = stats(r["first_audio_s"])
            growth = summary["median"] / base_latency if base_latency else None
            section.rows.append(
                Row.of(
                    "concurrency",
                    f"N={n} sites: vad-end -> first answer audio",
                    "ms",
                    summary,
                    peer=f"{growth:.2f}x N=1" if growth else "",
                )
            )
    section.results = {
        "commands_per_site": len(items),
        "playlist_audio_s": audio_s,
        "asr_workers": asr_workers,
        "levels": results,
    }
    section.notes.append(
        f"each site speaks {len(items)} commands ({audio_s:.0f} s of audio) at real-time pace; "
        f"all sites start together; asr_workers={asr_workers}"
    )
    return section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 commands per site")
    parser.add_argument("--sites", default=None, help="default 1,2,4 (--pool: 1,2,4,8)")
    parser.add_argument("--pool", action="store_true", help="the ASR worker pool over MQTT")
    parser.add_argument("--workers", default="1,2,3", help="--pool: worker process counts")
    parser.add_argument("--rounds", type=int, default=2, help="--pool: rounds per level")
    parser.add_argument(
        "--period", type=float, default=20.0, help="--pool model: seconds between commands"
    )
    parser.add_argument("--commands", type=int, default=None)
    parser.add_argument("--asr-workers", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    commands = args.commands or (3 if args.quick else 6)
    if args.pool:
        from benchmarks.pool import run_pool

        sites = [int(n) for n in (args.sites or "1,2,4,8").split(",")]
        workers = [int(n) for n in args.workers.split(",")]
        section = run_pool(sites, workers, args.rounds, commands, args.period)
        section.report(args.json)
        return 0
    levels = [int(n) for n in (args.sites or "1,2,4").split(",")]
    section = asyncio.run(run(levels, commands, args.asr_workers))
    section.report(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
