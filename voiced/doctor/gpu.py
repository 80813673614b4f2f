"""What a GPU failure means and how to fix it: plain functions of probe results.

Which ROCm override an arch needs, whether torch ships kernels for the card, whether this
user may open the device nodes, and what an error text from torch/HIP/CUDA says.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from voiced.accel import base_arch
from voiced.doctor.checks import Check

# The wheel indexes of the current torch release (pytorch.org's install selector lists them;
# torch >= 2.6, the gpu extra's floor, has none for ROCm older than 6.2.4).
ROCM_TORCH_INDEX = "https://download.pytorch.org/whl/rocm7.2"
CUDA_TORCH_INDEX = "https://download.pytorch.org/whl/cu128"

# Consumer Radeons missing from ROCm's support list run the kernels of the nearest supported
# target of the same generation when HSA_OVERRIDE_GFX_VERSION says so.
HSA_OVERRIDES = {
    **dict.fromkeys(("gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"), "10.3.0"),
    **dict.fromkeys(("gfx1101", "gfx1102", "gfx1103"), "11.0.0"),
    **dict.fromkeys(("gfx902", "gfx909", "gfx90c"), "9.0.0"),
}


GPU_ERRORS = ("hipErrorNoBinaryForGpu", "invalid device function", "no kernel image is available")


def arch_from_target_version(version: int) -> str:
    """KFD's ``gfx_target_version`` (major*10000 + minor*100 + stepping) -> ``gfx1031``."""
    major, rest = divmod(version, 10000)
    minor, stepping = divmod(rest, 100)
    return f"gfx{major}{minor}{stepping:x}"


def hsa_override_for(arch: str) -> str | None:
    """The HSA_OVERRIDE_GFX_VERSION an arch needs; None when it needs none or none is known."""
    return HSA_OVERRIDES.get(base_arch(arch))


def rocm_override_fix(arch: str) -> str:
    """The fix for missing ROCm kernels: the override, or a newer torch build."""
    override = hsa_override_for(arch) if arch else None
    if override:
        return (
            f"your {base_arch(arch)} is not in ROCm's support list: set "
            f"HSA_OVERRIDE_GFX_VERSION={override} (export it, and uncomment "
            "Environment=HSA_OVERRIDE_GFX_VERSION in the unit via `systemctl edit voiced`)"
        )
    if arch:
        return (
            f"no kernels for {base_arch(arch)} in this torch build and no known override "
            "for it; install a torch build for a newer ROCm that supports the card "
            f"(pip install torch torchaudio --index-url {ROCM_TORCH_INDEX})"
        )
    return (
        "the GPU's architecture has no kernels in this build: on an RDNA2 card set "
        "HSA_OVERRIDE_GFX_VERSION=10.3.0, on RDNA3 11.0.0 (run rocminfo | grep gfx)"
    )


def diagnose_gpu_error(text: str, arch: str = "", hip: bool = True) -> tuple[str, str]:
    """(what went wrong, how to fix it) for an error text from torch/HIP/CUDA."""
    lowered = text.lower()
    if "libamdhip64" in lowered or "libhsa-runtime64" in lowered or "librocm" in lowered:
        return (
            "the ROCm runtime libraries are missing: " + _first_line(text),
            "install the ROCm runtime (e.g. apt install rocm-hip-runtime, or AMD's "
            "amdgpu-install --usecase=rocm) or use torch from the ROCm wheel index, which "
            f"bundles them: pip install torch torchaudio --index-url {ROCM_TORCH_INDEX}; "
            "check that /opt/rocm/lib is in the library path (ldconfig)",
        )
    if any(marker.lower() in lowered for marker in GPU_ERRORS):
        return _no_kernels_diagnosis(arch, hip)
    if (
        "/dev/kfd" in lowered
        or "permission denied" in lowered
        or "hsa_status_error_out_of_resources" in lowered
    ):
        return (
            "the GPU device nodes are not accessible: " + _first_line(text),
            "add the user to the render and video groups: sudo usermod -aG render,video "
            "$USER, then log out and in (the service unit gets them via "
            "SupplementaryGroups)",
        )
    if "driver version is insufficient" in lowered or "cuda driver" in lowered:
        return (
            "the NVIDIA driver is older than this torch's CUDA: " + _first_line(text),
            "update the NVIDIA driver, or install torch for an older CUDA "
            "(pytorch.org's install selector lists the CUDA versions of each release)",
        )
    if "out of memory" in lowered:
        return (
            "the GPU is out of memory: " + _first_line(text),
            "close other GPU programs (ollama, a game) or use a smaller model",
        )
    return (
        _first_line(text) or "the GPU test failed",
        "run `voiced doctor --json` and read "
        "the error; a ROCm card missing from the support list needs HSA_OVERRIDE_GFX_VERSION",
    )


def _no_kernels_diagnosis(arch: str, hip: bool) -> tuple[str, str]:
    """(what went wrong, how to fix it) when torch has no kernels for the GPU."""
    if hip:
        return (
            f"no GPU kernels for {base_arch(arch) or 'this GPU'} (hipErrorNoBinaryForGpu)",
            rocm_override_fix(arch),
        )
    return (
        f"this torch build has no kernels for the GPU's compute capability {arch or ''}".rstrip(),
        "install a torch build for your CUDA version that includes the card "
        f"(pip install torch torchaudio --index-url {CUDA_TORCH_INDEX})",
    )


def _first_line(text: str) -> str:
    """The line of an error text that says what went wrong (at most 300 characters)."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    # the last line of a traceback says what happened; HIP prints its error on its own line
    for line in reversed(lines):
        if any(m.lower() in line.lower() for m in (*GPU_ERRORS, "error", "cannot open")):
            return line[:300]
    return lines[-1][:300] if lines else ""


@dataclass(frozen=True)
class DeviceNode:
    """A GPU device node (/dev/kfd, /dev/dri/renderD*, /dev/nvidia*) and its group."""

    path: str
    exists: bool
    accessible: bool = False  # read+write for this process
    group: str = ""


@dataclass(frozen=True)
class UserGroups:
    """The user's groups now and after a new login."""

    name: str
    effective: frozenset[str]  # groups this process has now
    listed: frozenset[str]  # groups /etc/group gives the user (a new login picks them up)


def device_access_check(nodes: Iterable[DeviceNode], user: UserGroups) -> Check | None:
    """Whether this user can open the GPU device nodes; None when there are none."""
    present = [n for n in nodes if n.exists]
    if not present:
        return None
    blocked = [n for n in present if not n.accessible]
    if not blocked:
        return Check("GPU device access", True, ", ".join(n.path for n in present), section="gpu")
    return _blocked_check(blocked, user)


def _blocked_check(blocked: list[DeviceNode], user: UserGroups) -> Check:
    """The failed access check for device nodes this user cannot open, and its fix."""
    groups = sorted({n.group for n in blocked if n.group})
    missing = [g for g in groups if g not in user.effective]
    paths = ", ".join(n.path for n in blocked)
    if missing and all(g in user.listed for g in missing):
        return Check(
            "GPU device access",
            False,
            f"{paths}: {user.name} was added to {', '.join(missing)} but this "
            "session does not have the group yet",
            f"log out and back in (or reboot); `id` must list {', '.join(missing)}",
            section="gpu",
        )
    if missing:
        return Check(
            "GPU device access",
            False,
            f"{paths}: {user.name} is not in the {' and '.join(missing)} group"
            f"{'s' if len(missing) > 1 else ''}",
            f"sudo usermod -aG {','.join(sorted({*missing, 'render', 'video'}))} "
            f"{user.name}, then log out and in (the system unit gets them via "
            "SupplementaryGroups)",
            section="gpu",
        )
    return Check(
        "GPU device access",
        False,
        f"{paths}: not readable and writable",
        "check the device permissions (udev rules for /dev/kfd and /dev/dri: "
        "group render, mode 0660)",
        section="gpu",
    )


def rocm_kernels_check(arch: str, arch_list: Iterable[str], override: str | None) -> Check:
    """Whether the torch build ships kernels for the card (predicts hipErrorNoBinaryForGpu)."""
    archs = sorted({base_arch(a) for a in arch_list})
    name = f"ROCm kernels for {base_arch(arch)}"
    if not archs or base_arch(arch) in archs:
        extra = f" (HSA_OVERRIDE_GFX_VERSION={override})" if override else ""
        return Check(name, True, f"this torch build has kernels for it{extra}", section="gpu")
    return Check(
        name,
        False,
        f"this torch build has kernels only for {', '.join(archs)}",
        rocm_override_fix(arch),
        section="gpu",
    )


def override_env_check(override: str | None, real_arch: str) -> Check | None:
    """A warning when HSA_OVERRIDE_GFX_VERSION is set to a value the card does not need."""
    if not override:
        return None
    wanted = hsa_override_for(real_arch) if real_arch else None
    if real_arch and wanted is None:
        return Check(
            "HSA_OVERRIDE_GFX_VERSION",
            None,
            f"set to {override}, but {base_arch(real_arch)} is supported without it",
            "unset HSA_OVERRIDE_GFX_VERSION (a wrong target can hang or crash)",
            section="gpu",
        )
    if wanted and wanted != override:
        return Check(
            "HSA_OVERRIDE_GFX_VERSION",
            False,
            f"set to {override}, but {base_arch(real_arch)} needs {wanted}",
            f"HSA_OVERRIDE_GFX_VERSION={wanted}",
            section="gpu",
        )
    return Check(
        "HSA_OVERRIDE_GFX_VERSION",
        True,
        f"{override} for {base_arch(real_arch)}" if real_arch else override,
        section="gpu",
    )


def matmul_check(
    result: dict[str, Any] | None, returncode: int, stderr: str, arch: str, hip: bool
) -> Check:
    """Judge the child process that ran fp16 matmul, conv1d and attention on the GPU."""
    name = "fp16 on the GPU"
    if returncode == 0 and result is not None:
        errors = {k: float(v) for k, v in (result.get("errors") or {}).items()}
        errors = errors or {"matmul": float(result.get("max_rel_error", 1.0))}
        wrong = {k: v for k, v in errors.items() if not v <= 0.02}  # NaN is wrong too
        speed = f"{result.get('tflops', 0):.1f} TFLOPS"
        if wrong:
            return Check(
                name,
                False,
                "wrong results from "
                + ", ".join(f"{k} (max relative error {v:.3g})" for k, v in wrong.items()),
                "the GPU computes garbage: a wrong HSA_OVERRIDE_GFX_VERSION or a "
                "broken driver; unset the override or update the driver",
                section="gpu",
            )
        ops = ", ".join(f"{k} {v:.1e}" for k, v in errors.items())
        return Check(
            name,
            True,
            f"{result.get('device', '')}: max relative error {ops}; 1024x1024 matmul {speed}",
            section="gpu",
        )
    what, fix = diagnose_gpu_error(stderr or f"exit status {returncode}", arch, hip)
    return Check(name, False, what, fix, section="gpu")
