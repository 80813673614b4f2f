"""The GPU section: torch build, devices, device access, kernels, fp16 work, torchaudio."""

from __future__ import annotations

import importlib.metadata
import os
import re

from voiced.accel import TorchProbe, choose_torch_device, pick_gpu
from voiced.doctor.checks import Check
from voiced.doctor.gpu import (
    CUDA_TORCH_INDEX,
    ROCM_TORCH_INDEX,
    UserGroups,
    device_access_check,
    diagnose_gpu_error,
    matmul_check,
    override_env_check,
    rocm_kernels_check,
)
from voiced.doctor.hardware import GpuHardware, gpu_absent_reason, run_matmul


def torch_index(probe: TorchProbe) -> str:
    """The wheel index URL matching a torch build."""
    if probe.hip_version:
        major_minor = ".".join(probe.hip_version.split(".")[:2])
        return f"https://download.pytorch.org/whl/rocm{major_minor}"
    if probe.cuda_version:
        return f"https://download.pytorch.org/whl/cu{probe.cuda_version.replace('.', '')[:3]}"
    return "https://download.pytorch.org/whl/cpu"


def _local_tag(version: str) -> str:
    """``2.5.1+rocm6.2`` -> ``rocm6.2``."""
    return version.partition("+")[2]


def _public(version: str) -> str:
    """``2.5.1+rocm6.2`` -> ``2.5.1``."""
    return version.partition("+")[0]


def _release(version: str) -> str:
    """``2.9.1+rocm6.4`` -> ``2.9``: up to 2.8, torchaudio 2.X is built for torch 2.X only."""
    return ".".join(_public(version).split(".")[:2])


def _numbers(version: str) -> tuple[int, ...]:
    """``2.11.1+cu130`` -> ``(2, 11, 1)`` (pre-release and local parts dropped)."""
    parts = []
    for part in _public(version).split("."):
        digits = re.match(r"\d+", part)
        if not digits:
            break
        parts.append(int(digits.group()))
    return tuple(parts)


def _cuda_only_build(import_error: str) -> bool:
    """The import failed for want of CUDA's libraries: a CUDA build beside a CPU/ROCm torch."""
    return bool(re.search(r"lib(c10_cuda|torch_cuda|cudart|cudnn|cublas)\S*\.so", import_error))


def torchaudio_check(
    torch_probe: TorchProbe, version: str | None, import_error: str | None, torch_spec: str | None
) -> Check:
    """torch and torchaudio that load together, built for the same backend (CPU/CUDA/ROCm).

    ``torch_spec`` is torchaudio's requirement on torch from its metadata. Up to 2.8 it is
    ``==2.X.Y`` and the wheel indexes tag both packages with the backend (``+rocm6.2``), so
    they must match exactly. From 2.9 torchaudio is built on torch's stable ABI: it asks
    ``>=2.X`` and may carry no tag, so a newer torch is fine (torch 2.14.1 loads torchaudio
    2.11.1) and the import itself is the backend test: the default wheel is a CUDA build,
    which does not load beside a CPU or ROCm torch.
    """
    name = "torch + torchaudio"
    if version is None:
        return Check(
            name,
            True,
            "torchaudio is not installed (optional: with it the torch Whisper engine resamples "
            "and levels audio on its device; without it soxr does it on the CPU)",
            section="gpu",
        )
    torch_version = torch_probe.version
    index = torch_index(torch_probe)
    fix = (
        f"reinstall both from one index: pip install --force-reinstall torch=="
        f"{_public(torch_version) or '<version>'} torchaudio --index-url {index}"
    )
    if import_error:
        return _torchaudio_import_check(torch_probe, version, import_error, index, fix)
    mismatch = _torchaudio_mismatch(torch_version, version, torch_spec)
    if mismatch is not None:
        return Check(name, False, mismatch, fix, section="gpu")
    return Check(name, True, f"torch {torch_version}, torchaudio {version}", section="gpu")


def _torchaudio_import_check(
    torch_probe: TorchProbe, version: str, import_error: str, index: str, fix: str
) -> Check:
    """The failed check for a torchaudio that does not load, and its fix."""
    name = "torch + torchaudio"
    if _cuda_only_build(import_error) and not torch_probe.cuda_version:
        backend = "ROCm" if torch_probe.hip_version else "CPU"
        return Check(
            name,
            False,
            f"torchaudio {version} is a CUDA build (the default wheel) and does not load "
            f"beside the {backend} build of torch {torch_probe.version}: {import_error}",
            # a plain install keeps this torch where it satisfies the torchaudio found,
            # else takes a newer one of the same build from the same index
            f"install the {backend} build of torchaudio: pip uninstall -y torchaudio && "
            f"pip install torchaudio --index-url {index}",
            section="gpu",
        )
    return Check(
        name, False, f"torchaudio {version} does not load: {import_error}", fix, section="gpu"
    )


def _torchaudio_mismatch(torch_version: str, version: str, torch_spec: str | None) -> str | None:
    """How a loading torchaudio does not match torch (its requirement, release or backend
    tag); None when they match."""
    spec = (torch_spec or "").replace(" ", "")
    exact, floor = spec.startswith("=="), spec.startswith(">=")
    wanted = spec[2:]
    if exact and torch_version and _public(wanted) != _public(torch_version):
        return (
            f"torchaudio {version} was built for torch {wanted}, "
            f"but torch {torch_version} is installed"
        )
    if floor and torch_version and _numbers(torch_version) < _numbers(wanted):
        return (
            f"torchaudio {version} needs torch >= {wanted}, but torch {torch_version} is installed"
        )
    stable_abi = _numbers(version) >= (2, 9)
    if not stable_abi and torch_version and _release(version) != _release(torch_version):
        return (
            f"torchaudio {version} belongs to torch {_release(version)}, "
            f"but torch {torch_version} is installed"
        )
    tags = (_local_tag(torch_version), _local_tag(version))
    if all(tags) and _backend_of_tag(tags[0]) != _backend_of_tag(tags[1]):
        return f"torch {torch_version} and torchaudio {version} are built for different backends"
    return None


def _backend_of_tag(tag: str) -> str:
    """A local version tag without its version: the backend."""
    return re.sub(r"[\d.]+$", "", tag)  # rocm6.2 -> rocm, cu124 -> cu, cpu -> cpu


def gpu_checks(
    torch_probe: TorchProbe,
    hw: GpuHardware,
    user: UserGroups,
    gpu_wanted: bool,
    matmul: bool = True,
) -> list[Check]:
    """torch build, devices, access, kernels, real fp16 matmul/conv1d/attention, torchaudio."""
    checks = [_torch_build_check(torch_probe, hw, gpu_wanted)]
    checks.append(_gpu_check(torch_probe, hw, gpu_wanted))
    access = device_access_check(hw.nodes, user)
    if access is not None:
        access.required = gpu_wanted
        checks.append(access)
    real_arch = hw.kfd_archs[0] if hw.kfd_archs else ""
    override = os.environ.get("HSA_OVERRIDE_GFX_VERSION")
    env_check = override_env_check(override, real_arch)
    if env_check is not None:
        checks.append(env_check)
    if torch_probe.gpu and matmul:
        checks += _matmul_checks(torch_probe, real_arch, override, gpu_wanted)
    elif matmul:
        checks.append(Check("fp16 on the GPU", None, "skipped: no GPU for torch", section="gpu"))
    checks.append(torchaudio_check(torch_probe, *_torchaudio_facts()))
    return checks


def _torch_build_check(torch_probe: TorchProbe, hw: GpuHardware, gpu_wanted: bool) -> Check:
    """The torch check: its build (ROCm, CUDA or CPU-only), or why it does not import."""
    if torch_probe.backend == "unavailable":
        what, fix = diagnose_gpu_error(torch_probe.reason, _arch(hw, torch_probe), True)
        not_installed = "not installed" in torch_probe.reason
        return Check(
            "torch",
            None if not_installed else False,
            torch_probe.reason if not_installed else what,
            f"GPU engines need torch: pip install torch torchaudio --index-url "
            f"{ROCM_TORCH_INDEX} (AMD) or {CUDA_TORCH_INDEX} (NVIDIA)"
            if not_installed
            else fix,
            required=gpu_wanted,
            section="gpu",
        )
    build = (
        f"ROCm {torch_probe.hip_version}"
        if torch_probe.hip_version
        else f"CUDA {torch_probe.cuda_version}"
        if torch_probe.cuda_version
        else "CPU-only"
    )
    return Check(
        "torch build",
        True,
        f"torch {torch_probe.version} ({build}); "
        f"torch.version.hip = {torch_probe.hip_version or None}",
        section="gpu",
    )


def _gpu_check(torch_probe: TorchProbe, hw: GpuHardware, gpu_wanted: bool) -> Check:
    """The GPU check: the devices torch sees and the one chosen, or why there is none."""
    if torch_probe.gpu:
        names = ", ".join(f"{d.name} ({d.arch})" for d in torch_probe.devices)
        choice = choose_torch_device("auto", probe=torch_probe)
        return Check(
            "GPU",
            True,
            f"{torch_probe.backend}: {names}; torch engines use {choice.device}: {choice.reason}",
            section="gpu",
        )
    reason = gpu_absent_reason(hw, torch_probe)
    failed_query = "failed" in torch_probe.reason
    return Check(
        "GPU",
        False if (gpu_wanted or failed_query) else None,
        f"none usable: {reason}",
        _gpu_absent_fix(torch_probe, hw, failed_query),
        required=gpu_wanted,
        section="gpu",
    )


def _gpu_absent_fix(torch_probe: TorchProbe, hw: GpuHardware, failed_query: bool) -> str:
    """The fix when torch has no usable GPU: for a failed query, a CPU-only torch beside a
    card, or none needed."""
    if failed_query:
        hip = bool(torch_probe.hip_version)
        _, fix = diagnose_gpu_error(torch_probe.reason, _arch(hw, torch_probe), hip)
        return fix
    if (
        hw.pci
        and torch_probe.backend in ("cpu", "unavailable")
        and not (torch_probe.hip_version or torch_probe.cuda_version)
    ):
        return (
            f"a CPU-only torch cannot use the {hw.pci[0].split()[0]} card: pip install "
            "--force-reinstall torch torchaudio --index-url "
            f"{ROCM_TORCH_INDEX if hw.pci[0].startswith('AMD') else CUDA_TORCH_INDEX}"
        )
    return "none needed on a CPU-only server: voiced runs Whisper (int8) and Piper on the CPU"


def _matmul_checks(
    torch_probe: TorchProbe, real_arch: str, override: str | None, gpu_wanted: bool
) -> list[Check]:
    """The real fp16 work on the GPU, and before it (ROCm) whether torch has its kernels."""
    hip = bool(torch_probe.hip_version)
    checks = []
    result, code, stderr = run_matmul()
    chosen, _ = pick_gpu(torch_probe)
    arch = (result or {}).get("arch") or (chosen or torch_probe.devices[0]).arch
    if hip and result is not None and result.get("arch_list"):
        checks.append(rocm_kernels_check(arch, result["arch_list"], override))
    check = matmul_check(result, code, stderr, real_arch or arch, hip)
    check.required = gpu_wanted
    checks.append(check)
    return checks


def _arch(hw: GpuHardware, probe: TorchProbe) -> str:
    """The card's arch: from the kernel's KFD topology, else what torch reports."""
    if hw.kfd_archs:
        return hw.kfd_archs[0]
    return probe.devices[0].arch if probe.devices else ""


def _torchaudio_facts() -> tuple[str | None, str | None, str | None]:
    """(installed version, import error, its requirement on torch: ``==2.5.1`` / ``>=2.11``)."""
    try:
        version = importlib.metadata.version("torchaudio")
    except importlib.metadata.PackageNotFoundError:
        return None, None, None
    spec = None
    for req in importlib.metadata.requires("torchaudio") or []:
        match = re.match(r"^torch\s*(?:\(\s*)?(==|>=)\s*([^\s;,)]+)", req)
        if match:
            spec = match.group(1) + match.group(2)
    try:
        import torchaudio.functional  # noqa: F401  (loads libtorchaudio where it has one)
    except Exception as exc:  # an ABI or backend mismatch shows up as OSError
        return version, _error_chain(exc), spec
    return version, None, spec


def _error_chain(exc: BaseException) -> str:
    """An exception and its causes: torch's "Could not load this library" hides the reason
    (``libc10_cuda.so: cannot open shared object file``) in ``__cause__``."""
    parts = []
    while exc is not None and len(parts) < 3:
        parts.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__
    return " <- ".join(parts)
