"""TTS on a GPU machine (CUDA stands in for ROCm): what runs where, and how fast.

1. onnxruntime: version and the execution providers it offers.
2. piper: the bundled voice on the CUDA provider (needs onnxruntime-gpu) or the AMD one
   (MIGraphX, onnxruntime-migraphx) beside the CPU provider, same text, same run; if no GPU
   provider is offered, says so and times the CPU only.
3. vits-transformers: random VITS models (tiny, and MMS-TTS-sized: transformers' default
   VitsConfig has MMS's architecture) on cuda float16 vs cpu float32. Random weights: timing
   and placement only, the audio is noise. RTF = synthesis seconds / audio seconds.

Meant to finish in about a minute on the GPU machine (the MMS-sized model on the CPU is
the slow part: two runs only). Writes gpu_tts.json to $OUT (or --out) as well.

    python benchmarks/gpu_tts.py [--runs 5] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tiny_vits import build_random_vits

from benchmarks.common import ensure_importable, stats

TEXT = (
    "The kitchen lights are on. The living room is at twenty one degrees. The front door is locked."
)


def timed(fn, runs: int) -> dict[str, float]:
    """Seconds per call: median, min, max, n (after one warm-up call)."""
    fn()  # warm-up (kernels, cuDNN algorithm choice for this length)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return stats(times)


def piper_section(runs: int) -> dict[str, Any]:
    from voiced_plugins.tts_piper import PiperOptions, PiperTts

    from voiced.accel import probe_onnxruntime
    from voiced.sentences import split_sentences

    probe = probe_onnxruntime()
    out: dict[str, Any] = {"onnxruntime": probe.to_dict(), "engines": {}}
    print(f"onnxruntime {probe.version}: {probe.reason}")
    devices = ["cpu"]
    if "CUDAExecutionProvider" in probe.providers:
        devices.insert(0, "cuda")
    if {"MIGraphXExecutionProvider", "ROCMExecutionProvider"} & set(probe.providers):
        devices.insert(0, "rocm")
    if devices == ["cpu"]:
        note = (
            "no GPU execution provider: install onnxruntime-gpu (NVIDIA) or "
            "onnxruntime-migraphx (AMD) in place of onnxruntime to run piper on the GPU; "
            "timing the CPU only"
        )
        out["note"] = note
        print(note)
    first = split_sentences(TEXT)[0]
    for device in devices:
        try:
            started = time.perf_counter()
            tts = PiperTts(PiperOptions(device=device))
            tts.load()
            load_s = time.perf_counter() - started
            audio = tts.synthesize(TEXT).seconds
            whole = timed(lambda tts=tts: tts.synthesize(TEXT), runs)
            sentence = timed(lambda tts=tts: tts.synthesize(first), runs)
            rtf = whole["median"] / audio
            out["engines"][device] = {
                "info": tts.info,
                "load_seconds": load_s,
                "audio_seconds": audio,
                "whole_s": whole,
                "first_sentence_s": sentence,
                "rtf": {"median": rtf},
            }
            print(
                f"piper {device:>4} [{tts.info['provider']}]: load {load_s:.2f} s, "
                f"whole {whole['median'] * 1000:.1f} ms, first sentence "
                f"{sentence['median'] * 1000:.1f} ms, RTF {rtf:.4f}"
            )
            tts.close()
        except Exception as exc:
            out["engines"][device] = {"error": f"{type(exc).__name__}: {exc}"}
            print(f"piper {device}: FAILED {type(exc).__name__}: {exc}")
            traceback.print_exc()
    return out


def vits_section(runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        import torch
        from voiced_plugins.tts_vits import VitsOptions, VitsTts

        from voiced.accel import probe_torch
    except ImportError as exc:
        print(f"vits: skipped ({exc})")
        return {"error": f"ImportError: {exc}"}
    probe = probe_torch()
    out["torch"] = probe.to_dict()
    print(f"torch: {probe.reason}")
    devices = (["cuda"] if probe.gpu else []) + ["cpu"]
    with tempfile.TemporaryDirectory() as tmp:
        for size in ("tiny", "mms-sized"):
            folder = build_random_vits(Path(tmp) / size, tiny=size == "tiny")
            for device in devices:
                key = f"{size} {device}"
                try:
                    tts = VitsTts(VitsOptions(model=str(folder), device=device, seed=0))
                    started = time.perf_counter()
                    tts.load()
                    load_s = time.perf_counter() - started
                    chunk = tts.synthesize(TEXT)
                    slow = size != "tiny" and device == "cpu"  # seconds per call
                    stat = timed(
                        lambda tts=tts: tts.synthesize(TEXT), min(runs, 2) if slow else runs
                    )
                    params = next(tts._model.parameters())
                    rtf = stat["median"] / chunk.seconds if chunk.seconds else float("nan")
                    out[key] = {
                        "info": tts.info,
                        "param_dtype": str(params.dtype),
                        "param_device": str(params.device),
                        "load_seconds": load_s,
                        "audio_seconds": chunk.seconds,
                        "sample_rate": chunk.format.rate,
                        "synthesize_s": stat,
                        "rtf": {"median": rtf},
                    }
                    print(
                        f"vits {key:>15}: {tts.device} {params.dtype}, load {load_s:.2f} s, "
                        f"{stat['median'] * 1000:.1f} ms [{stat['min'] * 1000:.1f}-"
                        f"{stat['max'] * 1000:.1f}] for {chunk.seconds:.2f} s audio at "
                        f"{chunk.format.rate} Hz, RTF {rtf:.4f}"
                    )
                    tts.close()
                    if device == "cuda":
                        torch.cuda.empty_cache()
                except Exception as exc:
                    out[key] = {"error": f"{type(exc).__name__}: {exc}"}
                    print(f"vits {key}: FAILED {type(exc).__name__}: {exc}")
                    traceback.print_exc()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", default=os.environ.get("OUT"), help="folder for gpu_tts.json")
    args = parser.parse_args()
    ensure_importable()
    report = {"piper": piper_section(args.runs), "vits": vits_section(args.runs)}
    if args.out:
        path = Path(args.out) / "gpu_tts.json"
        path.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
