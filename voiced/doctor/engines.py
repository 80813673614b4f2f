"""The engines section: CTranslate2 (Whisper) and ONNX Runtime (Piper), and the CPU path."""

from __future__ import annotations

from voiced.accel import Ct2Probe, OnnxProbe, TorchProbe
from voiced.doctor.checks import Check

CT2_ROCM_HINT = (
    "CTranslate2's ROCm/HIP wheels are not on PyPI: they are assets of its GitHub releases "
    "(4.7.0 on: the rocm-python-wheels zip for Linux); pip install the wheel for your Python "
    "from it over the PyPI one"
)


def onnx_distributions_check(onnx: OnnxProbe) -> Check | None:
    """Two onnxruntime distributions share one ``onnxruntime`` folder: the last one wins.

    faster-whisper and piper-tts require plain ``onnxruntime``, so installing or upgrading
    voiced puts its CPU-only files over an installed onnxruntime-migraphx or -gpu.
    """
    gpu = [d for d in onnx.distributions if d != "onnxruntime"]
    if "onnxruntime" not in onnx.distributions or not gpu:
        return None
    lost = not any(
        p not in ("CPUExecutionProvider", "AzureExecutionProvider") for p in onnx.providers
    )
    detail = f"both onnxruntime and {', '.join(gpu)} are installed; they share one folder" + (
        ", and plain onnxruntime's files won: no GPU provider is offered"
        if lost
        else " (the GPU build's files are in place now, but the next upgrade of voiced, "
        "faster-whisper or piper-tts puts plain onnxruntime back over them)"
    )
    return Check(
        "onnxruntime distributions",
        False if lost else None,
        detail,
        f"pip uninstall -y onnxruntime {' '.join(gpu)} && pip install {gpu[0]} "
        "(again after each upgrade of voiced)",
        section="engines",
    )


def engine_checks(ct2: Ct2Probe, onnx: OnnxProbe, torch_probe: TorchProbe) -> list[Check]:
    """CTranslate2, ONNX Runtime, and whether the CPU engines work."""
    checks = [ct2_check(ct2, torch_probe)]
    checks.append(onnx_check(onnx, torch_probe))
    if onnx.available:
        dists = onnx_distributions_check(onnx)
        if dists is not None:
            checks.append(dists)
    cpu_ok = (
        ct2.available
        and "int8" in " ".join(ct2.compute_types.get("cpu", ()))
        and onnx.available
        and "CPUExecutionProvider" in onnx.providers
    )
    checks.append(
        Check(
            "CPU path",
            cpu_ok,
            "Whisper on CTranslate2 (int8) and Piper on ONNX Runtime run on the CPU"
            if cpu_ok
            else "the CPU engines are not usable (see above)",
            "" if cpu_ok else "pip install ctranslate2 faster-whisper onnxruntime",
            required=True,
            section="engines",
        )
    )
    return checks


def ct2_check(ct2: Ct2Probe, torch_probe: TorchProbe) -> Check:
    """The CTranslate2 check: its build, the GPUs it sees, its CPU compute types."""
    if not ct2.available:
        return Check(
            "CTranslate2",
            False,
            ct2.reason,
            "pip install ctranslate2 faster-whisper",
            required=True,
            section="engines",
        )
    cpu_types = ", ".join(ct2.compute_types.get("cpu", ()))
    build = {"rocm": "ROCm/HIP build", "cuda": "CUDA build", "cpu": "CPU build"}.get(
        ct2.build, "build unknown"
    )
    if ct2.cuda_device_count:
        kind = "ROCm" if ct2.gpu_backend == "rocm" else "CUDA"
        detail = (
            f"{ct2.version} ({build}): {ct2.cuda_device_count} {kind} device(s) "
            f"({', '.join(ct2.compute_types.get('cuda', ()))}); CPU: {cpu_types}"
        )
        return Check("CTranslate2", True, detail, "", section="engines")
    amd = bool(torch_probe.hip_version) or torch_probe.backend == "rocm"
    ok, more, fix = _ct2_without_gpu(ct2, amd)
    detail = f"{ct2.version} ({build}): CPU ({cpu_types}); no GPU{more}"
    return Check("CTranslate2", ok, detail, fix, section="engines")


def _ct2_without_gpu(ct2: Ct2Probe, amd: bool) -> tuple[bool | None, str, str]:
    """A CTranslate2 that sees no GPU: (ok, what to add to the detail, fix)."""
    if amd and ct2.build == "rocm":
        return (
            None,
            ": the ROCm build sees no AMD GPU",
            "check /dev/kfd access and HSA_OVERRIDE_GFX_VERSION (see the GPU section)",
        )
    if amd:
        return (
            None,
            "; this CTranslate2 is the PyPI (CUDA) build: on this AMD GPU "
            "whisper-ctranslate2 runs on the CPU (whisper-transformers uses the GPU)",
            CT2_ROCM_HINT,
        )
    return True, "", ""


_ONNX_GPU_PROVIDERS = (
    "ROCMExecutionProvider",
    "MIGraphXExecutionProvider",
    "CUDAExecutionProvider",
    "TensorrtExecutionProvider",
)


def onnx_check(onnx: OnnxProbe, torch_probe: TorchProbe) -> Check:
    """The ONNX Runtime check: its providers, and a hint when a GPU has none."""
    if not onnx.available:
        return Check(
            "ONNX Runtime",
            False,
            onnx.reason,
            "pip install onnxruntime",
            required=True,
            section="engines",
        )
    gpu_providers = [
        p for p in onnx.providers if p != "CPUExecutionProvider" and p in _ONNX_GPU_PROVIDERS
    ]
    ok: bool | None = True
    fix = ""
    if torch_probe.gpu and not gpu_providers:
        ok = None
        fix = (
            "Piper runs on the CPU: for the GPU install onnxruntime-migraphx (AMD; "
            "onnxruntime-rocm is deprecated, its last release is 1.22) or "
            "onnxruntime-gpu (NVIDIA) in place of onnxruntime: pip uninstall -y "
            "onnxruntime && pip install "
            + ("onnxruntime-migraphx" if torch_probe.backend == "rocm" else "onnxruntime-gpu")
        )
    return Check(
        "ONNX Runtime",
        ok,
        f"{onnx.version}: {', '.join(onnx.providers)}",
        fix,
        section="engines",
    )
