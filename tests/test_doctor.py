"""``voiced doctor``: the decisions behind each ✓/✗/! and the checks run for real here."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest
from voiced_plugins.mqtt import MqttOptions
from voiced_plugins.mqtt.doctor import mqtt_check

from voiced import accel
from voiced.accel import Ct2Probe, GpuInfo, OnnxProbe, TorchProbe
from voiced.config import load_settings
from voiced.doctor import (
    Check,
    DeviceNode,
    UserGroups,
    arch_from_target_version,
    device_access_check,
    diagnose,
    diagnose_gpu_error,
    engine_checks,
    gpu_checks,
    matmul_check,
    override_env_check,
    rocm_kernels_check,
    run_matmul,
    scan_hardware,
    torchaudio_check,
)
from voiced.doctor.gpu_checks import _torchaudio_facts
from voiced.doctor.runner import gpu_requested
from voiced.hookspecs import hookimpl

NO_BINARY = (
    '"hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"\n'
    "Aborted (core dumped)"
)
ROCM_TORCH = TorchProbe(
    "rocm",
    "torch sees AMD Radeon RX 6700 XT",
    "2.5.1+rocm6.2",
    "6.2.41133",
    "",
    (GpuInfo(0, "AMD Radeon RX 6700 XT", "gfx1031"),),
)
CPU_TORCH = TorchProbe("cpu", "torch 2.13.0+cpu (CPU-only build) sees no GPU", "2.13.0+cpu")
ALICE = UserGroups("alice", frozenset({"alice"}), frozenset({"alice"}))

ROOT = Path(__file__).parents[1]


def by_name(checks: list[Check], name: str) -> Check:
    return next(c for c in checks if c.name == name)


# -- ROCm failures and their fixes -----------------------------------------------------------


@pytest.mark.parametrize(
    ("arch", "override"),
    [
        ("gfx1031", "10.3.0"),
        ("gfx1032:sramecc-:xnack-", "10.3.0"),
        ("gfx1035", "10.3.0"),
        ("gfx1101", "11.0.0"),
        ("gfx1102", "11.0.0"),
        ("gfx90c", "9.0.0"),
    ],
)
def test_no_binary_for_gpu_is_fixed_with_the_override_for_the_cards_arch(arch, override):
    what, fix = diagnose_gpu_error(NO_BINARY, arch)
    assert "hipErrorNoBinaryForGpu" in what
    assert f"HSA_OVERRIDE_GFX_VERSION={override}" in fix


def test_no_binary_for_a_card_without_a_known_override_asks_for_a_newer_rocm_build():
    what, fix = diagnose_gpu_error("HIP error: invalid device function", "gfx1010")
    assert "gfx1010" in what
    assert "HSA_OVERRIDE" not in fix
    assert "newer ROCm" in fix


def test_missing_libamdhip64_points_to_the_rocm_runtime():
    probe = TorchProbe(
        "unavailable",
        "importing torch failed: OSError: libamdhip64.so: cannot "
        "open shared object file: No such file or directory",
    )
    check = by_name(
        gpu_checks(
            probe,
            scan_hardware(Path("/nonexistent"), Path("/nonexistent")),
            ALICE,
            gpu_wanted=True,
            matmul=False,
        ),
        "torch",
    )
    assert check.ok is False and check.required
    assert "ROCm runtime libraries are missing" in check.detail
    assert "rocm-hip-runtime" in check.fix and "whl/rocm" in check.fix


def test_a_user_outside_the_render_group_is_told_to_join_it():
    nodes = [
        DeviceNode("/dev/kfd", True, False, "render"),
        DeviceNode("/dev/dri/renderD128", True, False, "render"),
    ]
    check = device_access_check(nodes, ALICE)
    assert check is not None and check.ok is False
    assert "alice is not in the render group" in check.detail
    assert "sudo usermod -aG render,video alice" in check.fix


def test_a_user_just_added_to_render_must_log_in_again():
    listed = UserGroups("alice", frozenset({"alice"}), frozenset({"alice", "render", "video"}))
    check = device_access_check([DeviceNode("/dev/kfd", True, False, "render")], listed)
    assert check is not None and check.ok is False
    assert "log out and back in" in check.fix


def test_accessible_device_nodes_pass_and_no_nodes_means_no_check():
    assert device_access_check([DeviceNode("/dev/kfd", True, True, "render")], ALICE).ok is True
    assert device_access_check([], ALICE) is None


def test_a_torch_build_without_kernels_for_the_card_predicts_the_override():
    check = rocm_kernels_check("gfx1031:xnack-", ["gfx900", "gfx1030", "gfx1100"], None)
    assert check.ok is False
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in check.fix
    # with the override the card reports the target it borrowed
    assert rocm_kernels_check("gfx1030", ["gfx1030", "gfx1100"], "10.3.0").ok is True


def test_an_override_that_does_not_fit_the_card_is_flagged():
    assert override_env_check("10.3.0", "gfx1101").ok is False  # needs 11.0.0
    assert override_env_check("10.3.0", "gfx1100").ok is None  # supported: not needed
    assert override_env_check("10.3.0", "gfx1031").ok is True
    assert override_env_check(None, "gfx1031") is None


@pytest.mark.parametrize(
    ("value", "arch"),
    [
        (100301, "gfx1031"),
        (100300, "gfx1030"),
        (110001, "gfx1101"),
        (90012, "gfx90c"),
        (90010, "gfx90a"),
    ],
)
def test_kfd_target_versions_name_the_gfx_arch(value, arch):
    assert arch_from_target_version(value) == arch


def test_hardware_scan_reads_pci_kfd_topology_and_device_nodes(tmp_path):
    sys_root, dev_root = tmp_path / "sys", tmp_path / "dev"
    gpu = sys_root / "bus/pci/devices/0000:03:00.0"
    gpu.mkdir(parents=True)
    (gpu / "class").write_text("0x030000\n")
    (gpu / "vendor").write_text("0x1002\n")
    (gpu / "device").write_text("0x73df\n")
    for node, version in (("0", 0), ("1", 100301)):  # node 0 is the CPU
        folder = sys_root / f"class/kfd/kfd/topology/nodes/{node}"
        folder.mkdir(parents=True)
        (folder / "properties").write_text(f"cpu_cores_count 8\ngfx_target_version {version}\n")
    (sys_root / "module/amdgpu").mkdir(parents=True)
    (dev_root / "dri").mkdir(parents=True)
    (dev_root / "kfd").write_text("")
    (dev_root / "dri/renderD128").write_text("")
    hw = scan_hardware(sys_root, dev_root)
    assert hw.pci == ["AMD 0x73df (0000:03:00.0)"]
    assert hw.kfd_archs == ["gfx1031"]
    assert hw.amdgpu_loaded
    assert [n.path for n in hw.nodes] == [str(dev_root / "kfd"), str(dev_root / "dri/renderD128")]


def test_a_cpu_only_torch_on_a_machine_with_a_radeon_says_to_install_the_rocm_build(tmp_path):
    gpu = tmp_path / "bus/pci/devices/0000:03:00.0"
    gpu.mkdir(parents=True)
    for name, value in (("class", "0x030000"), ("vendor", "0x1002"), ("device", "0x73df")):
        (gpu / name).write_text(value)
    hw = scan_hardware(tmp_path, tmp_path / "dev")
    check = by_name(gpu_checks(CPU_TORCH, hw, ALICE, gpu_wanted=False, matmul=False), "GPU")
    assert check.ok is None and not check.required
    assert "whl/rocm" in check.fix


def test_a_gpu_asked_for_in_the_config_but_missing_is_a_required_failure():
    hw = scan_hardware(Path("/nonexistent"), Path("/nonexistent"))
    check = by_name(gpu_checks(CPU_TORCH, hw, ALICE, gpu_wanted=True, matmul=False), "GPU")
    assert check.ok is False and check.required


# -- the fp16 matmul -------------------------------------------------------------------------


def test_a_matmul_that_aborts_with_no_binary_yields_the_override_fix():
    check = matmul_check(None, -6, NO_BINARY, "gfx1032", hip=True)
    assert check.ok is False
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in check.fix


def test_wrong_numbers_from_any_fp16_op_fail_and_right_ones_pass():
    errors = {"matmul": 0.0004, "conv1d": 0.0005, "attention": 0.0007}
    good = {"device": "Radeon", "errors": errors, "tflops": 21.5}
    check = matmul_check(good, 0, "", "gfx1100", hip=True)
    assert check.ok is True
    assert all(op in check.detail for op in ("matmul", "conv1d", "attention"))
    for op, value in (("conv1d", 0.9), ("attention", float("nan"))):
        bad = {**good, "errors": {**errors, op: value}}
        check = matmul_check(bad, 0, "", "gfx1100", hip=True)
        assert check.ok is False and op in check.detail


@pytest.mark.slow
def test_the_fp16_script_computes_matmul_conv1d_and_attention_within_tolerance():
    # the same child the doctor runs, on the CPU here (torch has fp16 kernels for all three)
    result, code, stderr = run_matmul(device="cpu")
    assert code == 0, stderr
    assert set(result["errors"]) == {"matmul", "conv1d", "attention"}
    assert matmul_check(result, code, stderr, "", hip=False).ok is True


@pytest.mark.slow
def test_the_gpu_matmul_runs_in_a_child_process_and_fails_cleanly_without_a_gpu():
    if accel.probe_torch().gpu:
        pytest.skip("this machine has a GPU; the failure path needs none")
    result, code, stderr = run_matmul()
    assert result is None and code != 0
    check = matmul_check(result, code, stderr, "", hip=False)
    assert check.ok is False
    assert "no usable GPU" in check.detail


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_machine_the_fp16_matmul_gives_right_numbers():
    probe = accel.probe_torch()
    if not probe.gpu:
        pytest.skip(f"no GPU: {probe.reason}")
    result, code, stderr = run_matmul()
    check = matmul_check(result, code, stderr, probe.devices[0].arch, bool(probe.hip_version))
    assert check.ok is True, (check.detail, check.fix)


# -- torch and torchaudio ----------------------------------------------------------------------


def test_torchaudio_absent_is_said_and_is_not_an_error():
    check = torchaudio_check(CPU_TORCH, None, None, None)
    assert check.ok is True
    assert "not installed" in check.detail and "soxr" in check.detail


def test_torchaudio_pinned_to_another_torch_fails_with_a_reinstall_from_the_rocm_index():
    # up to 2.8 torchaudio's metadata pins torch==X
    check = torchaudio_check(ROCM_TORCH, "2.4.0+rocm6.2", None, "==2.4.0")
    assert check.ok is False
    assert "built for torch 2.4.0" in check.detail
    assert "--index-url https://download.pytorch.org/whl/rocm6.2" in check.fix
    assert "torch==2.5.1" in check.fix


def test_torchaudio_for_another_backend_fails():
    check = torchaudio_check(ROCM_TORCH, "2.5.1+cu124", None, None)
    assert check.ok is False
    assert "different backends" in check.detail


def test_torchaudio_that_does_not_load_fails_with_the_error():
    error = "OSError: libtorchaudio.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"
    check = torchaudio_check(ROCM_TORCH, "2.5.1+rocm6.2", error, "==2.5.1")
    assert check.ok is False and "undefined symbol" in check.detail


def test_matching_torch_and_torchaudio_pass():
    assert torchaudio_check(ROCM_TORCH, "2.5.1+rocm6.2", None, "==2.5.1").ok is True


ROCM_TORCH_29 = TorchProbe("rocm", "", "2.9.1+rocm6.4", "6.4.43482", "", ROCM_TORCH.devices)
CUDA_TORCH_214 = TorchProbe("cpu", "no GPU", "2.14.1", "", "13.0")


def test_torchaudio_2_9_without_a_pin_or_a_tag_passes_for_the_same_torch_release():
    # torchaudio >= 2.9: torch>=X in its metadata, no +rocm tag in its version
    assert torchaudio_check(ROCM_TORCH_29, "2.9.1", None, ">=2.9").ok is True


def test_torchaudio_2_11_loads_on_a_newer_torch_through_the_stable_abi():
    # torchaudio 2.11.1 asks torch>=2.11; torch 2.14.1 loads it unmodified
    check = torchaudio_check(CUDA_TORCH_214, "2.11.1", None, ">=2.11")
    assert check.ok is True, check.detail


def test_torchaudio_newer_than_its_torch_fails_with_the_rocm_reinstall():
    check = torchaudio_check(ROCM_TORCH_29, "2.11.1", None, ">=2.11")
    assert check.ok is False
    assert "needs torch >= 2.11" in check.detail and "2.9.1+rocm6.4" in check.detail
    assert "torch==2.9.1 torchaudio --index-url https://download.pytorch.org/whl/rocm6.4" in (
        check.fix
    )


# what torchaudio 2.11.1 from the default index says beside torch 2.13.0+cpu (seen here)
CUDA_BUILD_ERROR = (
    "OSError: Could not load this library: .../torchaudio/lib/_torchaudio.so"
    " <- OSError: libc10_cuda.so: cannot open shared object file: No such file or directory"
)


def test_the_default_cuda_torchaudio_beside_a_cpu_torch_is_named_with_the_cpu_index():
    check = torchaudio_check(CPU_TORCH, "2.11.1", CUDA_BUILD_ERROR, ">=2.11")
    assert check.ok is False
    assert "is a CUDA build" in check.detail and "CPU build of torch 2.13.0+cpu" in check.detail
    assert "libc10_cuda.so" in check.detail
    assert check.fix.endswith(
        "pip uninstall -y torchaudio && "
        "pip install torchaudio --index-url https://download.pytorch.org/whl/cpu"
    )


def test_the_default_cuda_torchaudio_beside_a_rocm_torch_is_sent_to_the_rocm_index():
    error = "OSError: libcudart.so.13: cannot open shared object file: No such file or directory"
    check = torchaudio_check(ROCM_TORCH_29, "2.9.1", error, ">=2.9")
    assert check.ok is False and "ROCm build of torch" in check.detail
    assert "--index-url https://download.pytorch.org/whl/rocm6.4" in check.fix


def test_the_torchaudio_facts_are_read_from_the_installed_metadata():
    version, error, spec = _torchaudio_facts()
    try:
        expected = importlib.metadata.version("torchaudio")
    except importlib.metadata.PackageNotFoundError:
        assert (version, error, spec) == (None, None, None)
        return
    assert version == expected
    assert spec is not None and spec[:2] in ("==", ">=")


# -- engines ---------------------------------------------------------------------------------


def test_the_pypi_ctranslate2_on_an_amd_machine_runs_on_the_cpu_and_names_the_rocm_wheels():
    ct2 = accel.probe_ctranslate2()  # the real PyPI library: a CUDA build that sees no GPU
    check = by_name(engine_checks(ct2, accel.probe_onnxruntime(), ROCM_TORCH), "CTranslate2")
    assert ct2.build == "cuda"
    assert "CUDA build" in check.detail and "runs on the CPU" in check.detail
    assert check.ok is None and "release" in check.fix and "not on PyPI" in check.fix


def test_a_rocm_build_of_ctranslate2_is_reported_as_rocm():
    ct2 = Ct2Probe(
        True, "", "4.7.1", 1, {"cpu": ("int8",), "cuda": ("float16", "int8_float16")}, "rocm"
    )
    check = by_name(engine_checks(ct2, accel.probe_onnxruntime(), ROCM_TORCH), "CTranslate2")
    assert check.ok is True
    assert "ROCm/HIP build" in check.detail and "1 ROCm device" in check.detail


def test_onnxruntime_without_a_gpu_provider_on_an_amd_machine_points_to_migraphx():
    onnx = OnnxProbe(True, "", "1.20.0", ("CPUExecutionProvider",), ("onnxruntime",))
    check = by_name(engine_checks(accel.probe_ctranslate2(), onnx, ROCM_TORCH), "ONNX Runtime")
    assert check.ok is None
    assert "pip install onnxruntime-migraphx" in check.fix and "deprecated" in check.fix


def test_plain_onnxruntime_installed_over_migraphx_is_a_failure_with_the_reinstall():
    onnx = OnnxProbe(
        True,
        "",
        "1.23.2",
        ("AzureExecutionProvider", "CPUExecutionProvider"),
        ("onnxruntime", "onnxruntime-migraphx"),
    )
    checks = engine_checks(accel.probe_ctranslate2(), onnx, ROCM_TORCH)
    check = by_name(checks, "onnxruntime distributions")
    assert check.ok is False and "plain onnxruntime's files won" in check.detail
    assert check.fix.startswith(
        "pip uninstall -y onnxruntime onnxruntime-migraphx && pip install onnxruntime-migraphx"
    )


def test_both_onnxruntime_dists_with_the_gpu_files_on_top_is_a_warning():
    onnx = OnnxProbe(
        True,
        "",
        "1.23.2",
        ("MIGraphXExecutionProvider", "CPUExecutionProvider"),
        ("onnxruntime", "onnxruntime-migraphx"),
    )
    check = by_name(
        engine_checks(accel.probe_ctranslate2(), onnx, ROCM_TORCH), "onnxruntime distributions"
    )
    assert check.ok is None and "next upgrade" in check.detail


def test_one_onnxruntime_distribution_needs_no_check():
    onnx = accel.probe_onnxruntime()  # the real one: plain onnxruntime only
    assert onnx.distributions == ("onnxruntime",)
    names = [c.name for c in engine_checks(accel.probe_ctranslate2(), onnx, CPU_TORCH)]
    assert "onnxruntime distributions" not in names


def test_the_gpu_check_names_the_card_the_engines_use_and_why():
    igpu = GpuInfo(0, "AMD Radeon Graphics", "gfx1036", 2 << 30, integrated=True)
    dgpu = GpuInfo(1, "AMD Radeon RX 7900 XTX", "gfx1100", 24 << 30, bf16=True)
    probe = TorchProbe("rocm", "", "2.9.1+rocm6.4", "6.4", "", (igpu, dgpu), ("gfx1100",))
    hw = scan_hardware(Path("/nonexistent"), Path("/nonexistent"))
    check = by_name(gpu_checks(probe, hw, ALICE, gpu_wanted=True, matmul=False), "GPU")
    assert "torch engines use cuda:1" in check.detail
    assert "passed over GPU 0: AMD Radeon Graphics" in check.detail


def test_the_cpu_path_fails_when_ctranslate2_is_unusable():
    broken = Ct2Probe(False, "importing ctranslate2 failed: OSError: libiomp5.so")
    check = by_name(engine_checks(broken, accel.probe_onnxruntime(), CPU_TORCH), "CPU path")
    assert check.ok is False and check.required


# -- MQTT against a real broker ----------------------------------------------------------------


def test_mqtt_check_connects_to_a_reachable_broker(mosquitto):
    endpoint = MqttOptions(host="127.0.0.1", port=mosquitto.port).endpoint()
    assert mqtt_check(endpoint).ok is True


def test_mqtt_check_reports_a_refused_login_with_the_fix(mosquitto):
    wrong = MqttOptions(
        host="127.0.0.1", port=mosquitto.auth_port, username="voiced", password="wrong"
    ).endpoint()
    check = mqtt_check(wrong)
    assert check.ok is False and check.required
    assert "refused user 'voiced'" in check.detail
    assert "password" in check.fix
    right = MqttOptions(
        host="127.0.0.1", port=mosquitto.auth_port, username="voiced", password=mosquitto.password
    ).endpoint()
    assert mqtt_check(right).ok is True


def test_mqtt_check_reports_an_unreachable_broker(mosquitto):
    port = mosquitto.port
    mosquitto.stop()
    check = mqtt_check(MqttOptions(host="127.0.0.1", port=port).endpoint())
    assert check.ok is False
    assert "cannot connect" in check.detail and "mosquitto" in check.fix


# -- whole runs ------------------------------------------------------------------------------


class FailingPluginCheck:
    @hookimpl
    def voiced_doctor_checks(self, config):
        return [
            Check(
                "soundcard relay",
                False,
                "relay board not found",
                "plug it in",
                required=True,
                section="plugins",
            )
        ]


def write_config(tmp_path: Path, extra: str = "") -> Path:
    config = tmp_path / "voiced.toml"
    config.write_text(
        f'[pipeline]\nsource = ["file"]\nservice = ["log"]\nsink = []\n'
        f'handler = ["builtin"]\nintent = ["hassil"]\n{extra}'
    )
    return config


def test_a_plugins_failing_required_check_fails_the_doctor(tmp_path):
    report = diagnose(
        write_config(tmp_path), matmul=False, extra_plugins=[("relay", FailingPluginCheck())]
    )
    assert by_name(report.checks, "soundcard relay").ok is False
    assert [c.name for c in report.failed_required] == ["soundcard relay"]


def test_a_missing_voice_file_is_a_failed_model_check(tmp_path):
    config = write_config(tmp_path, '[stages.tts.piper]\nvoice = "/nonexistent/voice.onnx"\n')
    report = diagnose(config, matmul=False)
    check = by_name(report.checks, "tts piper")
    assert check.ok is False and check.required
    assert "/nonexistent/voice.onnx" in check.detail


@pytest.mark.slow
def test_doctor_on_this_cpu_machine_reports_the_cpu_path_healthy_and_no_gpu(tmp_path):
    config = write_config(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "voiced.doctor", "--config", str(config), "--json"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    report = json.loads(proc.stdout)
    checks = {c["name"]: c for c in report["checks"]}
    if accel.probe_torch().gpu:
        pytest.skip("this machine has a GPU")
    assert proc.returncode == 0, [c for c in report["checks"] if c["status"] == "fail"]
    assert report["ok"] is True
    assert checks["CPU path"]["status"] == "ok"
    assert checks["GPU"]["status"] == "warn"
    assert "none usable" in checks["GPU"]["detail"]
    assert "sees no GPU" in checks["GPU"]["detail"]  # the reason, from torch itself
    assert report["facts"]["torch"]["backend"] in ("cpu", "unavailable")


@pytest.mark.slow
def test_doctor_exits_non_zero_and_prints_the_fix_when_the_config_is_broken(tmp_path):
    config = write_config(tmp_path, '[stages.service.mqtt]\nhost = "127.0.0.1"\nport = 9\n')
    config.write_text(config.read_text().replace('service = ["log"]', 'service = ["mqtt"]'))
    proc = subprocess.run(
        [sys.executable, "-m", "voiced.doctor", "--config", str(config), "--no-gpu-test"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 1
    assert "✗ MQTT broker mqtt://127.0.0.1:9: cannot connect" in proc.stdout
    assert "fix: start the broker" in proc.stdout


def test_a_gpu_engine_with_a_cpu_engine_behind_it_does_not_make_the_gpu_required(tmp_path):
    config = write_config(
        tmp_path,
        '[stages.asr.whisper-transformers]\ndevice = "cuda"\n',
    )
    config.write_text(
        config.read_text().replace(
            "[pipeline]\n", '[pipeline]\nasr = ["whisper-transformers", "whisper-ctranslate2"]\n'
        )
    )
    assert not gpu_requested(load_settings(config))


def test_a_gpu_only_chain_makes_the_gpu_required(tmp_path):
    config = write_config(tmp_path, '[stages.asr.whisper-transformers]\ndevice = "cuda"\n')
    config.write_text(
        config.read_text().replace("[pipeline]\n", '[pipeline]\nasr = ["whisper-transformers"]\n')
    )
    assert gpu_requested(load_settings(config))


def test_a_gpu_asked_for_by_a_stage_the_pipeline_does_not_use_is_not_required(tmp_path):
    config = write_config(tmp_path, '[stages.tts.vits]\ndevice = "cuda"\n')
    assert not gpu_requested(load_settings(config))


def test_the_shipped_default_config_needs_no_gpu():
    assert not gpu_requested(load_settings(ROOT / "config" / "voiced.toml"))


def test_the_languages_section_says_which_stage_lacks_a_language_and_what_to_do(tmp_path):
    from voiced.config import Settings
    from voiced.doctor import language_checks

    def checks(**settings):
        return {c.name: c for c in language_checks(Settings(**settings))}

    sites = {"kids": {"language": "de"}, "far": {"language": "tlh"}}
    found = checks(language="en", sites=sites)
    german = found["de: speech recognition"]
    assert german.ok is False and german.required
    assert "English-only; site kids speaks de" in german.detail
    assert "bundled:base" in german.fix and "voiced[languages]" in german.fix
    assert found["de: intents and answers"].ok is True
    assert found["tlh: intents and answers"].ok is False
    assert "de, " in found["tlh: intents and answers"].fix  # the languages it has
    spoken = found["de: spoken answers"]
    assert spoken.ok is None and "espeak-ng (de)" in spoken.detail and "[voices]" in spoken.fix
    assert found["en: spoken answers"].ok is True

    base = {"stages": {"asr": {"whisper-ctranslate2": {"model": "bundled:base"}}}}
    found = checks(language="zh", voices={"zh": "zh_CN-huayan-medium"}, **base)
    assert found["zh: speech recognition"].ok is True
    assert "pinned to zh" in found["zh: speech recognition"].detail
    assert found["zh: spoken answers"].ok is True
    assert found["zh: intents and answers"].ok is True  # OpenCC and pypinyin installed


def test_the_languages_section_names_what_chinese_matching_lacks(monkeypatch):
    import importlib.util

    from voiced.config import Settings
    from voiced.doctor import language_checks

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "pypinyin" else real(name)
    )
    found = {c.name: c for c in language_checks(Settings(language="zh"))}
    intents = found["zh: intents and answers"]
    assert intents.ok is None and "without pypinyin" in intents.detail
    assert "OpenCC" not in intents.detail and "voiced[languages]" in intents.fix
