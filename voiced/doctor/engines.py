"""The engines section: CTranslate2 (Whisper) and ONNX Runtime (Piper), and the CPU path."""

from __future__ import annotations

from voiced.accel import Ct2Probe, OnnxProbe, TorchProbe
from voiced.doctor.checks import Check


def engine_checks(ct2: Ct2Probe, onnx: OnnxProbe, torch_probe: TorchProbe) -> list[Check]:
    """CTranslate2, ONNX Runtime, and whether the CPU engines work."""
    checks = []
    amd = bool(torch_probe.hip_version) or torch_probe.backend == "rocm"
    if not ct2.available:
        checks.append(
            Check(
                "CTranslate2",
                False,
                ct2.reason,
                "pip install ctranslate2 faster-whisper",
                required=True,
                section="engines",
            )
        )
    else:
        cpu_types = ", ".join(ct2.compute_types.get("cpu", ()))
        if ct2.cuda_device_count:
            detail = (
                f"{ct2.version}: {ct2.cuda_device_count} CUDA device(s) "
                f"({', '.join(ct2.compute_types.get('cuda', ()))}); CPU: {cpu_types}"
            )
        else:
            detail = f"{ct2.version}: CPU ({cpu_types}); no CUDA device"
            if amd:
                detail += (
                    "; CTranslate2 has no ROCm build: on this AMD GPU the "
                    "whisper-ctranslate2 engine runs on the CPU (use "
                    "whisper-transformers for the GPU)"
                )
        checks.append(Check("CTranslate2", True, detail, section="engines"))
    if not onnx.available:
        checks.append(
            Check(
                "ONNX Runtime",
                False,
                onnx.reason,
                "pip install onnxruntime",
                required=True,
                section="engines",
            )
        )
    else:
        gpu_providers = [
            p
            for p in onnx.providers
            if p != "CPUExecutionProvider"
            and p
            in (
                "ROCMExecutionProvider",
                "MIGraphXExecutionProvider",
                "CUDAExecutionProvider",
                "TensorrtExecutionProvider",
            )
        ]
        ok: bool | None = True
        fix = ""
        if torch_probe.gpu and not gpu_providers:
            ok = None
            fix = (
                "Piper runs on the CPU: for the GPU install onnxruntime-gpu (NVIDIA) or "
                "onnxruntime-rocm / onnxruntime-migraphx (AMD) instead of onnxruntime"
            )
        checks.append(
            Check(
                "ONNX Runtime",
                ok,
                f"{onnx.version}: {', '.join(onnx.providers)}",
                fix,
                section="engines",
            )
        )
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
