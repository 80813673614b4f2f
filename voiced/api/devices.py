"""Device choice for engines: ROCm, CUDA, CPU (voiced/accel.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.accel import (
    Ct2Choice,
    Ct2Probe,
    DeviceChoice,
    DeviceError,
    GpuInfo,
    OnnxProbe,
    TorchProbe,
    choose_ct2_device,
    choose_torch_device,
    from_pretrained_dtype,
    parse_device,
    probe_ctranslate2,
    probe_onnxruntime,
    probe_torch,
    summary,
)

__all__ = [
    "Ct2Choice",
    "Ct2Probe",
    "DeviceChoice",
    "DeviceError",
    "GpuInfo",
    "OnnxProbe",
    "TorchProbe",
    "choose_ct2_device",
    "choose_torch_device",
    "from_pretrained_dtype",
    "parse_device",
    "probe_ctranslate2",
    "probe_onnxruntime",
    "probe_torch",
    "summary",
]
