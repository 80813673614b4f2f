"""Device choice for torch and CTranslate2 engines: decisions from probe facts, and real probes."""

from __future__ import annotations

import pytest

from voiced.accel import (
    Ct2Probe,
    DeviceError,
    GpuInfo,
    TorchProbe,
    bf16_for_arch,
    choose_ct2_device,
    choose_torch_device,
    ct2_build,
    ct2_reason,
    from_pretrained_dtype,
    has_kernels,
    parse_device,
    pick_gpu,
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
    with pytest.raises(DeviceError, match="only 1 GPU"):
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


# -- bfloat16 from the arch (torch.cuda.is_bf16_supported() says True on every ROCm build) --


@pytest.mark.parametrize(
    ("arch", "bf16"),
    [
        ("gfx1030", False),  # RX 6800/6900 (RDNA2)
        ("gfx1031", False),
        ("gfx1010:xnack-", False),  # RDNA1
        ("gfx906:sramecc+:xnack-", False),  # Radeon VII / MI50
        ("gfx90c", False),  # Ryzen 5000 APU
        ("gfx908", True),  # MI100
        ("gfx90a:sramecc+:xnack-", True),  # MI210/MI250
        ("gfx942", True),  # MI300
        ("gfx950", True),  # MI350
        ("gfx1100", True),  # RX 7900 (RDNA3)
        ("gfx1151", True),  # Strix Halo
        ("gfx1201", True),  # RX 9070 (RDNA4)
        ("sm_61", False),  # GTX 1080
        ("sm_75", False),  # T4 / RTX 2080: bf16 only emulated
        ("sm_80", True),
        ("sm_89", True),
        ("sm_120", True),
    ],
)
def test_bfloat16_support_is_read_from_the_architecture(arch, bf16):
    assert bf16_for_arch(arch) is bf16


def test_a_bfloat16_request_on_an_rdna2_card_under_rocm_gets_float16_and_says_why():
    rx6800 = GpuInfo(0, "AMD Radeon RX 6800", "gfx1030", 16 * GB, bf16_for_arch("gfx1030"))
    probe = TorchProbe("rocm", "torch sees an RX 6800", "2.9.1+rocm6.4", "6.4", "", (rx6800,))
    choice = choose_torch_device("auto", "bfloat16", probe=probe)
    assert (choice.device, choice.dtype) == ("cuda:0", "float16")
    assert "no bfloat16 on gfx1030" in choice.reason


# -- which card: kernels for this build, discrete before integrated, most memory --------------

IGPU = GpuInfo(0, "AMD Radeon Graphics", "gfx1036", 2 * GB, True, integrated=True)
RX7600 = GpuInfo(1, "AMD Radeon RX 7600", "gfx1102", 8 * GB, True)
RX7900 = GpuInfo(2, "AMD Radeon RX 7900 XTX", "gfx1100", 24 * GB, True)
ROCM_ARCHS = ("gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101")


def rocm_probe(*devices: GpuInfo, arch_list: tuple[str, ...] = ROCM_ARCHS) -> TorchProbe:
    return TorchProbe(
        "rocm", "torch sees them", "2.9.1+rocm6.4", "6.4", "", tuple(devices), arch_list
    )


def test_a_ryzen_igpu_at_index_0_is_passed_over_for_the_discrete_card():
    choice = choose_torch_device("auto", probe=rocm_probe(IGPU, RX7900))
    assert choice.device == "cuda:2"
    assert "AMD Radeon Graphics" in choice.reason and "no kernels" in choice.reason


def test_the_card_with_the_most_memory_wins_among_those_with_kernels():
    both = rocm_probe(RX7600, RX7900, arch_list=(*ROCM_ARCHS, "gfx1102"))
    gpu, why = pick_gpu(both)
    assert gpu == RX7900
    assert "most memory" in why and "RX 7600" in why and "less memory" in why


def test_a_card_without_kernels_in_this_build_is_skipped_even_with_more_memory():
    # gfx1102 is not in the build's list (it needs HSA_OVERRIDE_GFX_VERSION=11.0.0)
    big_unsupported = GpuInfo(0, "AMD Radeon RX 7600 XT", "gfx1102", 16 * GB, True)
    small_supported = GpuInfo(1, "AMD Radeon RX 6600", "gfx1030", 8 * GB, False)
    choice = choose_torch_device("auto", probe=rocm_probe(big_unsupported, small_supported))
    assert choice.device == "cuda:1"
    assert "passed over GPU 0" in choice.reason and "no kernels for gfx1102" in choice.reason


def test_an_hsa_override_makes_the_cards_stand_in_target_count():
    rx6700 = GpuInfo(0, "AMD Radeon RX 6700 XT", "gfx1031", 12 * GB, False)
    probe = TorchProbe("rocm", "", "2.9.1+rocm6.4", "6.4", "", (rx6700,), ROCM_ARCHS, "10.3.0")
    assert choose_torch_device("auto", probe=probe).device == "cuda:0"
    without = TorchProbe("rocm", "", "2.9.1+rocm6.4", "6.4", "", (rx6700,), ROCM_ARCHS)
    assert choose_torch_device("auto", probe=without).device == "cpu"


def test_an_integrated_gpu_serves_when_it_is_the_only_one_with_kernels():
    strix = GpuInfo(0, "AMD Radeon 8060S", "gfx1151", 64 * GB, True, integrated=True)
    choice = choose_torch_device("auto", probe=rocm_probe(strix, arch_list=("gfx1151",)))
    assert choice.device == "cuda:0"


def test_no_card_with_kernels_means_cpu_for_auto_and_an_error_for_cuda():
    probe = rocm_probe(RX7600)  # gfx1102 not in ROCM_ARCHS
    auto = choose_torch_device("auto", probe=probe)
    assert auto.device == "cpu" and "kernels only for" in auto.reason
    with pytest.raises(DeviceError, match="kernels only for"):
        choose_torch_device("cuda", probe=probe)
    with pytest.raises(DeviceError, match="no kernels"):
        choose_torch_device("cuda:1", probe=probe)


def test_a_named_device_is_used_as_named():
    choice = choose_torch_device("cuda:1", probe=rocm_probe(RX7600, RX7900, arch_list=()))
    assert choice.device == "cuda:1"


@pytest.mark.parametrize(
    ("arch", "arch_list", "ok"),
    [
        ("gfx1100", ("gfx1030", "gfx1100"), True),
        ("gfx1101", ("gfx1030", "gfx1100"), False),
        ("gfx90a:sramecc+:xnack-", ("gfx90a",), True),
        ("sm_86", ("sm_50", "sm_60", "sm_70", "sm_80", "sm_90"), True),  # sm_80 cubins run
        ("sm_61", ("sm_70", "sm_80", "sm_90"), False),  # dropped Pascal
        ("sm_120", ("sm_80", "sm_90", "compute_90"), True),  # PTX JIT
        ("sm_120", ("sm_80", "sm_90"), False),
        ("gfx1100", (), True),  # a build that does not say: not held against the card
    ],
)
def test_kernel_coverage_follows_rocm_and_cuda_rules(arch, arch_list, ok):
    assert has_kernels(arch, arch_list) is ok


# -- CTranslate2: the ROCm/HIP build from its release assets is "rocm", not "cuda" ------------


def _package(root, libs: list[str]):
    package = root / "ctranslate2"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (root / "ctranslate2.libs").mkdir()
    for name in libs:
        (root / "ctranslate2.libs" / name).write_bytes(b"\x7fELF")
    return package


def _elf(path, sections: list[str]) -> None:
    """A 64-bit ELF file whose section header table names ``sections`` (plus .shstrtab)."""
    import struct

    names = b"\0" + b"".join(n.encode() + b"\0" for n in [*sections, ".shstrtab"])
    offsets = [0]
    for name in [*sections, ".shstrtab"]:
        offsets.append(names.index(name.encode() + b"\0"))
    strtab_at = 64
    table_at = strtab_at + len(names)
    headers = b"".join(
        struct.pack("<IIQQQQIIQQ", o, 3 if i == len(offsets) - 1 else 1, 0, 0,
                    strtab_at if i == len(offsets) - 1 else 0,
                    len(names) if i == len(offsets) - 1 else 0, 0, 0, 1, 0)
        for i, o in enumerate(offsets)
    )  # fmt: skip
    ident = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, table_at, 0, 64, 0, 0, 64, len(offsets), len(offsets) - 1
    )
    path.write_bytes(header + names + headers)


def test_a_ctranslate2_bundling_hip_libraries_is_a_rocm_build(tmp_path):
    package = _package(tmp_path, ["libctranslate2-1.so.4.7.1", "libamdhip64-2.so.7"])
    assert ct2_build(package) == "rocm"


@pytest.mark.parametrize(
    ("sections", "build"),
    [
        ([".text", ".hip_fatbin", ".rodata"], "rocm"),
        ([".text", ".nv_fatbin", ".nvFatBinSegment"], "cuda"),
        ([".text", ".rodata"], "cpu"),
    ],
)
def test_the_core_librarys_device_code_section_tells_the_build(tmp_path, sections, build):
    package = _package(tmp_path, [])
    _elf(tmp_path / "ctranslate2.libs" / "libctranslate2-abc.so.4.7.1", sections)
    assert ct2_build(package) == build


def test_the_installed_pypi_ctranslate2_is_a_cuda_build():
    from pathlib import Path

    import ctranslate2

    assert ct2_build(Path(ctranslate2.__file__).parent) == "cuda"
    assert probe_ctranslate2().build == "cuda"


def test_ctranslate2_rocm_build_is_reported_as_rocm_though_its_api_says_cuda():
    probe = Ct2Probe(
        True,
        ct2_reason("4.7.1", "rocm", 1),
        "4.7.1",
        1,
        {"cpu": ("int8",), "cuda": ("bfloat16", "float16", "int8_float16")},
        "rocm",
    )
    choice = choose_ct2_device("auto", probe=probe)
    assert (choice.device, choice.backend, choice.compute_type) == ("cuda", "rocm", "float16")
    assert "ROCm/HIP build" in choice.reason and "ROCm device" in choice.reason


def test_a_cuda_ctranslate2_on_an_amd_box_points_to_the_rocm_release_assets():
    assert "release assets" in ct2_reason("4.8.5", "cuda", 0)
    assert choose_ct2_device("auto", probe=CT2_CUDA).backend == "cuda"


# -- transformers' dtype keyword --------------------------------------------------------------


def test_from_pretrained_gets_dtype_from_transformers_4_56_and_torch_dtype_before():
    assert from_pretrained_dtype("4.55.4", "f16") == {"torch_dtype": "f16"}
    assert from_pretrained_dtype("4.56.0", "f16") == {"dtype": "f16"}
    assert from_pretrained_dtype("5.24.0", "f16") == {"dtype": "f16"}
    assert from_pretrained_dtype("4.57.0.dev0", "f16") == {"dtype": "f16"}
