"""Device choice for torch and CTranslate2 engines: decisions from probe facts, and real probes."""

from __future__ import annotations

import pytest

from voiced.accel import (
    Ct2Probe,
    DeviceError,
    GpuInfo,
    TorchProbe,
    choose_ct2_device,
    choose_torch_device,
    parse_device,
    probe_ctranslate2,
    probe_onnxruntime,
    probe_torch,
)

GB = 1 << 30
RADEON = GpuInfo(0, "AMD Radeon RX 7900 XTX", "gfx1100", 24 * GB, bf16=True)
OLD_NVIDIA = GpuInfo(0, "NVIDIA GeForce GTX 1080", "sm_61", 8 * GB, bf16=False)
ROCM = TorchProbe(
    "rocm", "torch sees AMD Radeon RX 7900 XTX", "2.5.1+rocm6.2", "6.2", "", (RADEON,)
)
CUDA_OLD = TorchProbe("cuda", "torch sees a GTX 1080", "2.5.1+cu121", "", "12.1", (OLD_NVIDIA,))
CPU_ONLY = TorchProbe("cpu", "torch 2.5.1+cpu (CPU-only build) sees no GPU", "2.5.1+cpu")
NO_TORCH = TorchProbe("unavailable", "torch is not installed")
CT2_CPU = Ct2Probe(
    True, "ctranslate2 sees no CUDA device", "4.5", 0, {"cpu": ("float32", "int8", "int8_float32")}
)
CT2_CUDA = Ct2Probe(
    True,
    "ctranslate2 sees 1 CUDA device(s)",
    "4.5",
    1,
    {"cpu": ("float32", "int8"), "cuda": ("float16", "float32", "int8_float16")},
)


def test_auto_on_rocm_picks_the_gpu_in_float16_through_torch_cuda():
    choice = choose_torch_device("auto", probe=ROCM)
    assert (choice.device, choice.dtype, choice.backend) == ("cuda:0", "float16", "rocm")
    assert "gfx1100" in choice.reason


def test_bfloat16_is_used_where_the_gpu_supports_it_and_float16_where_not():
    assert choose_torch_device("cuda", "bfloat16", probe=ROCM).dtype == "bfloat16"
    fallback = choose_torch_device("cuda", "bfloat16", probe=CUDA_OLD)
    assert fallback.dtype == "float16"
    assert "no bfloat16" in fallback.reason


def test_auto_without_a_gpu_runs_on_the_cpu_in_float32_and_says_why():
    for probe in (CPU_ONLY, NO_TORCH):
        choice = choose_torch_device("auto", "float16", probe=probe)
        assert (choice.device, choice.dtype) == ("cpu", "float32")
        assert probe.reason in choice.reason


def test_cpu_request_never_asks_for_a_gpu():
    assert choose_torch_device("cpu", probe=ROCM).device == "cpu"


def test_an_absent_cuda_device_is_an_error_naming_what_exists():
    with pytest.raises(DeviceError, match="no GPU"):
        choose_torch_device("cuda", probe=CPU_ONLY)
    with pytest.raises(DeviceError, match="only 1 GPU"):
        choose_torch_device("cuda:1", probe=ROCM)


def test_device_strings_are_parsed_and_nonsense_is_refused():
    assert parse_device("cuda:1") == ("cuda", 1)
    assert parse_device("ROCm") == ("cuda", None)
    assert parse_device(" auto ") == ("auto", None)
    for bad in ("tpu", "cuda:x", "cpu:0", ""):
        with pytest.raises(DeviceError):
            parse_device(bad)


def test_ctranslate2_on_a_radeon_box_runs_int8_on_the_cpu_whatever_torch_says():
    # torch sees the Radeon (ROCM), CTranslate2 does not: only its own probe counts.
    choice = choose_ct2_device("auto", probe=CT2_CPU)
    assert (choice.device, choice.compute_type) == ("cpu", "int8")
    assert "no CUDA device" in choice.reason


def test_ctranslate2_uses_float16_on_a_cuda_device_it_sees():
    choice = choose_ct2_device("auto", probe=CT2_CUDA)
    assert (choice.device, choice.device_index, choice.compute_type) == ("cuda", 0, "float16")


def test_ctranslate2_refuses_cuda_it_cannot_see_and_unsupported_compute_types():
    with pytest.raises(DeviceError, match="no CUDA device"):
        choose_ct2_device("cuda:0", probe=CT2_CPU)
    with pytest.raises(DeviceError, match="only 1 CUDA"):
        choose_ct2_device("cuda:1", probe=CT2_CUDA)
    with pytest.raises(DeviceError, match="float16"):
        choose_ct2_device("cpu", "float16", probe=CT2_CPU)
    with pytest.raises(DeviceError, match="not usable"):
        choose_ct2_device("auto", probe=Ct2Probe(False, "ctranslate2 is not installed"))


def test_real_probes_report_facts_and_reasons():
    import ctranslate2
    import torch

    probe = probe_torch()
    assert probe.reason
    if not torch.cuda.is_available():
        assert probe.backend == "cpu" and not probe.devices
        assert choose_torch_device("auto").device == "cpu"
    else:
        assert probe.backend in ("cuda", "rocm") and probe.devices
    ct2 = probe_ctranslate2()
    assert ct2.available and ct2.cuda_device_count == ctranslate2.get_cuda_device_count()
    assert "int8" in ct2.compute_types["cpu"]
    assert "CPUExecutionProvider" in probe_onnxruntime().providers
