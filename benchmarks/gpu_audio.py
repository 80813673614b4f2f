"""torchaudio's part, timed: resampling and BS.1770 levelling on the device vs soxr on the CPU.

A 3 s command at 8/22.05/44.1/48 kHz -> 16 kHz on the torch engine's device:
- peer: soxr on the CPU (the core's resampler), then the 16 kHz result copied to the device;
- torchaudio: the audio at its own rate copied to the device and resampled there
  (plugins/asr_whisper/device_audio.py, a Kaiser-best sinc).
And the engine's loudness levelling (``level_lufs``) on the same device. On a machine without
a GPU (or without torchaudio) it says so and times what it can (``--device cpu``).
Writes gpu_audio.json (rows in the benchmarks' Section shape) to $OUT (or --out).

    python benchmarks/gpu_audio.py [--device auto|cuda|cpu] [--runs 20] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import Row, Section, ensure_importable, format_table, stats, write_json

SECONDS = 3.0
RATES = (8000, 22050, 44100, 48000)


def timed(call, runs: int, sync) -> dict[str, float]:
    """Seconds per call after two warm-up calls (kernel set-up, the resampler's filter)."""
    for _ in range(2):
        call()
    sync()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        sync()
        times.append(time.perf_counter() - started)
    return stats(times)


def measure(device: str, runs: int) -> Section:
    import torch
    from voiced_plugins.asr_whisper.device_audio import (
        SoxrAudio,
        TorchaudioAudio,
        torchaudio_reason,
    )

    section = Section("gpu-audio")
    reason = torchaudio_reason()
    if reason:
        section.notes.append(f"torchaudio not timed: {reason}")
    target = "cuda" if device != "cpu" and torch.cuda.is_available() else "cpu"
    if device != "cpu" and target == "cpu":
        section.notes.append("no GPU for torch: timed on the CPU")

    def sync() -> None:
        if target == "cuda":
            torch.cuda.synchronize()

    rng = np.random.default_rng(0)
    soxr_audio = SoxrAudio()
    ta_audio = TorchaudioAudio(target) if reason is None else None
    for rate in RATES:
        samples = rng.normal(0, 0.05, int(rate * SECONDS)).astype(np.float32)
        peer = timed(
            lambda s=samples, r=rate: torch.from_numpy(soxr_audio.to_target(s, r)).to(target),
            runs,
            sync,
        )
        what = f"{SECONDS:.0f} s at {rate} Hz -> 16 kHz on {target}"
        section.rows.append(Row.of("gpu-audio", f"{what}: soxr (CPU) + copy", "ms", peer))
        if ta_audio is None:
            continue
        summary = timed(lambda s=samples, r=rate: ta_audio.to_target(s, r), runs, sync)
        section.rows.append(
            Row.of(
                "gpu-audio",
                f"{what}: torchaudio",
                "ms",
                summary,
                peer=f"{summary['median'] / peer['median']:.2f}x soxr + copy",
            )
        )
    if ta_audio is not None:
        speech = ta_audio.to_target(rng.normal(0, 0.003, int(16000 * SECONDS)), 16000)
        summary = timed(lambda: ta_audio.level(speech, -23.0, 30.0), runs, sync)
        section.rows.append(
            Row.of("gpu-audio", f"level_lufs: BS.1770 levelling, 3 s on {target}", "ms", summary)
        )
    return section


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto | cuda | cpu")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--out", default=os.environ.get("OUT"), help="folder for gpu_audio.json")
    args = parser.parse_args()
    ensure_importable()
    section = measure(args.device, max(args.runs, 5))
    print(format_table(section.rows) if section.rows else "(no rows)")
    for note in section.notes:
        print(f"- {note}")
    if args.out:
        write_json(Path(args.out) / "gpu_audio.json", section.to_dict())
    return 0


if __name__ == "__main__":
    sys.exit(main())
