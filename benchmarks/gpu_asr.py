"""Whisper on a GPU: probe, convert the bundled model, time the engines (CUDA stands in for ROCm).

    pip install -e .[gpu]        # torch already installed (CUDA or ROCm build)
    python benchmarks/gpu_asr.py [--runs 10] [--json]

Prints what the probes see, the conversion time, then end-of-speech -> transcript latency and
RTF for ~2 s, ~5 s and ~20 s commands: whisper-transformers in float16 (and bfloat16 where the
GPU has it) with the fitted and the full encoder window, whisper-ctranslate2 on CUDA when
CTranslate2 sees the device, a direct faster-whisper call on the same device as the peer, and
the CPU engine for scale. Results also go to $OUT/gpu_asr.json when $OUT is set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from asr import COMMANDS, word_errors  # noqa: E402

if TYPE_CHECKING:
    from voiced.accel import DeviceChoice


def speech(text: str) -> tuple[bytes, str]:
    """Piper if it works here, else espeak-ng, else the sample WAV repeated to a similar length."""
    try:
        from asr import speech as piper

        return piper(text), "piper"
    except Exception as exc:
        print(f"# piper unavailable ({exc}); trying espeak-ng", file=sys.stderr)
    try:
        from speech import espeak

        return espeak(text), "espeak-ng"
    except Exception as exc:
        print(f"# espeak-ng unavailable ({exc}); using voiced/data/sample.wav", file=sys.stderr)
    from voiced.audio import read_pipeline_audio

    sample = read_pipeline_audio(ROOT / "voiced" / "data" / "sample.wav")
    want = int(len(text.split()) / 2.5 * 32000)
    return (sample * (want // len(sample) + 1))[: max(want, len(sample))], "sample.wav"


def direct_call(model: object, pcm: bytes) -> str:
    audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
    segments, _ = model.transcribe(audio, beam_size=1, language="en")
    return " ".join(s.text.strip() for s in segments)


def timed(call: Callable[[bytes], str], pcm: bytes, runs: int) -> tuple[list[float], str]:
    call(pcm)
    times, text = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        text = call(pcm)
        times.append(time.perf_counter() - started)
    return times, text


class _Engines:
    """The engines to time: label -> callable(pcm) -> text, and each one's load seconds."""

    def __init__(self) -> None:
        self.calls: dict[str, Callable[[bytes], str]] = {}
        self.loads: dict[str, float] = {}

    def add(self, label: str, make: Callable[[], object]) -> None:
        """Make and load an engine; one that fails to load is reported and left out."""
        started = time.perf_counter()
        try:
            engine = make()
            engine.load()
        except Exception as exc:
            print(f"# {label}: failed to load: {type(exc).__name__}: {exc}")
            return
        self.loads[label] = round(time.perf_counter() - started, 2)
        self.calls[label] = lambda pcm, e=engine: e.transcribe(pcm).text
        print(f"# {label}: loaded in {self.loads[label]} s on {engine.device}")


def main() -> int:
    parser = argparse.ArgumentParser(description="Whisper GPU benchmark for voiced")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from voiced import accel

    facts = accel.summary()
    print("# probes")
    print(json.dumps(facts, indent=1))
    torch_choice = accel.choose_torch_device("auto")
    print(f"# torch choice: {torch_choice}")
    try:
        print(f"# ct2 choice: {accel.choose_ct2_device('auto')}")
    except accel.DeviceError as exc:
        print(f"# ct2: {exc}")

    from voiced_plugins.asr_whisper.models import bundled_ct2_dir, converted

    cache = Path(os.environ.get("VOICED_CACHE_DIR") or tempfile.mkdtemp(prefix="voiced-gpu-"))
    started = time.perf_counter()
    converted(bundled_ct2_dir("tiny.en"), cache / "whisper-tiny.en-transformers")
    print(f"# converted bundled tiny.en in {time.perf_counter() - started:.1f} s into {cache}")

    engines = _Engines()
    ct2_cuda = facts["ctranslate2"]["cuda_device_count"] > 0
    _add_engines(engines, torch_choice, ct2_cuda, cache)
    peer = _add_direct_peer(engines, ct2_cuda)
    rows = _measure(engines, args.runs)
    for row in rows:
        ref = next((r for r in rows if r["audio"] == row["audio"] and r["engine"] == peer), row)
        row["ratio"] = round(row["median_ms"] / ref["median_ms"], 2)

    result = {"probes": facts, "loads_s": engines.loads, "rows": rows}
    if out_dir := os.environ.get("OUT"):
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        Path(out_dir, "gpu_asr.json").write_text(json.dumps(result, indent=1))
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    _print_table(rows, args.runs, peer)
    return 0


def _add_engines(
    engines: _Engines, torch_choice: DeviceChoice, ct2_cuda: bool, cache: Path
) -> None:
    """voiced's engines: transformers on the GPU (float16, bfloat16 where it has it; fitted and
    full window), ct2 on CUDA when it sees the device, then both on the CPU."""
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
    from voiced_plugins.asr_whisper.torch_engine import (
        WhisperTransformersAsr,
        WhisperTransformersOptions,
    )

    from voiced import accel

    gpu = torch_choice.device.startswith("cuda")
    if gpu:
        dtypes = ["float16"]
        if any(d.bf16 for d in accel.probe_torch().devices):
            dtypes.append("bfloat16")
        for dtype in dtypes:
            for window in ("fit", "full"):
                engines.add(
                    f"transformers {torch_choice.backend} {dtype} {window}",
                    lambda d=dtype, w=window: WhisperTransformersAsr(
                        WhisperTransformersOptions(
                            device="cuda", dtype=d, window=w, cache_dir=str(cache)
                        )
                    ),
                )
    else:
        print("# no GPU for torch: timing the CPU path only")
    if ct2_cuda:
        for window in ("fit", "full"):
            engines.add(
                f"ct2 cuda float16 {window}",
                lambda w=window: WhisperCt2Asr(WhisperCt2Options(device="cuda", window=w)),
            )
    engines.add("ct2 cpu int8 fit", lambda: WhisperCt2Asr(WhisperCt2Options(device="cpu")))
    engines.add(
        "transformers cpu fp32 fit",
        lambda: WhisperTransformersAsr(
            WhisperTransformersOptions(device="cpu", cache_dir=str(cache))
        ),
    )


def _add_direct_peer(engines: _Engines, ct2_cuda: bool) -> str:
    """The peer, faster-whisper called directly (on CUDA when CTranslate2 sees it, else the
    CPU); its label ("" when none loads)."""
    import faster_whisper
    from voiced_plugins.asr_whisper.models import bundled_ct2_dir

    for device, compute in (("cuda", "float16"), ("cpu", "int8")):
        if device == "cuda" and not ct2_cuda:
            continue
        try:
            direct = faster_whisper.WhisperModel(
                str(bundled_ct2_dir("tiny.en")), device=device, compute_type=compute
            )
            direct_call(direct, bytes(32000))  # 1 s of silence: fails now, not later
        except Exception as exc:
            print(f"# faster-whisper on {device} failed: {type(exc).__name__}: {exc}")
            continue
        peer = f"faster-whisper direct {device} {compute}"
        engines.calls[peer] = lambda pcm, m=direct: direct_call(m, pcm)
        return peer
    return ""


def _measure(engines: _Engines, runs: int) -> list[dict[str, Any]]:
    """A row for each command length and engine: latency, RTF and WER."""
    rows = []
    for length, text in COMMANDS.items():
        pcm, voice = speech(text)
        seconds = len(pcm) / 32000
        for name, call in engines.calls.items():
            times, out = timed(call, pcm, runs)
            errors, total = word_errors(text, out) if voice != "sample.wav" else (0, 1)
            rows.append(
                {
                    "audio": length,
                    "audio_s": round(seconds, 2),
                    "voice": voice,
                    "engine": name,
                    "median_ms": round(statistics.median(times) * 1000, 1),
                    "min_ms": round(min(times) * 1000, 1),
                    "max_ms": round(max(times) * 1000, 1),
                    "rtf": round(statistics.median(times) / seconds, 4),
                    "wer": round(errors / total, 3),
                    "text": out,
                }
            )
    return rows


def _print_table(rows: list[dict[str, Any]], runs: int, peer: str) -> None:
    """The rows as a table."""
    print(f"\n{runs} runs after warm-up; ratio is against '{peer}'")
    print(
        f"{'audio':>6} {'engine':34} {'median ms':>10} {'min-max ms':>15} {'RTF':>7} "
        f"{'x peer':>7} {'WER':>5}"
    )
    for r in rows:
        print(
            f"{r['audio']:>6} {r['engine']:34} {r['median_ms']:>10.1f} "
            f"{r['min_ms']:>7.1f}-{r['max_ms']:<7.1f} {r['rtf']:>7.4f} {r['ratio']:>6.2f}x "
            f"{r['wer']:>5.2f}"
        )


if __name__ == "__main__":
    sys.exit(main())
