"""Device probing in one place: which accelerator each engine library can use, and why.

Every library is asked on its own terms: torch for torch engines (ROCm shows up as
``torch.cuda`` with ``torch.version.hip`` set), CTranslate2 for CTranslate2 (it has no ROCm
build on PyPI, so a Radeon card visible to torch is invisible to it), onnxruntime for its
providers. Nothing heavy is imported at module import time; each probe imports its library
inside the function and reports a missing or broken library as ``unavailable`` with the reason.

Decision rule for an explicit request that cannot be honoured (``device = "cuda:1"`` on a
machine without that device): :class:`DeviceError`, naming what was found. The fallback chain
of the pipeline then lets the next engine serve, with an event that says so. ``"auto"`` never
fails: it picks the GPU when the library sees one and the CPU otherwise, with the reason.
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass, field
from typing import Any

log = logging.getLogger(__name__)

_DEVICE_RE = re.compile(r"^(auto|cpu|cuda|gpu|rocm)(?::(\d+))?$")


class DeviceError(RuntimeError):
    """A requested device does not exist or is not usable by the library in question."""


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    arch: str = ""  # gfx1100 on ROCm, sm_89 on CUDA
    total_memory: int = 0  # bytes
    bf16: bool = False


@dataclass(frozen=True)
class TorchProbe:
    backend: str  # "rocm" | "cuda" | "cpu" | "unavailable"
    reason: str = ""
    version: str = ""
    hip_version: str = ""
    cuda_version: str = ""
    devices: tuple[GpuInfo, ...] = ()

    @property
    def gpu(self) -> bool:
        return self.backend in ("rocm", "cuda") and bool(self.devices)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Ct2Probe:
    available: bool
    reason: str = ""
    version: str = ""
    cuda_device_count: int = 0
    compute_types: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class OnnxProbe:
    available: bool
    reason: str = ""
    version: str = ""
    providers: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DeviceChoice:
    """What a torch engine should run on: ``device`` is a torch device string."""

    device: str  # "cpu" | "cuda:0"
    dtype: str  # "float32" | "float16" | "bfloat16"
    reason: str
    backend: str = "cpu"  # "cpu" | "cuda" | "rocm"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Ct2Choice:
    """What a CTranslate2 engine should run on."""

    device: str  # "cpu" | "cuda"
    device_index: int
    compute_type: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _fail(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def probe_torch() -> TorchProbe:
    """Ask torch what it can run on; never raises."""
    try:
        import torch
    except ImportError as exc:
        return TorchProbe("unavailable", f"torch is not installed ({exc}); pip install voiced[gpu]")
    except Exception as exc:  # a broken install (e.g. mismatched ROCm libraries)
        return TorchProbe("unavailable", f"importing torch failed: {_fail(exc)}")
    version = str(torch.__version__)
    hip = str(getattr(torch.version, "hip", None) or "")
    cuda = str(getattr(torch.version, "cuda", None) or "")
    backend = "rocm" if hip else "cuda"
    try:
        if not torch.cuda.is_available():
            build = f"ROCm {hip}" if hip else (f"CUDA {cuda}" if cuda else "CPU-only")
            return TorchProbe(
                "cpu", f"torch {version} ({build} build) sees no GPU", version, hip, cuda
            )
        devices = []
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            arch = getattr(props, "gcnArchName", "") if hip else f"sm_{props.major}{props.minor}"
            devices.append(
                GpuInfo(i, props.name, arch, int(props.total_memory), _bf16_supported(torch, i))
            )
    except Exception as exc:  # HIP/CUDA runtime errors surface here, not at import
        return TorchProbe(
            "cpu", f"torch {version} GPU query failed: {_fail(exc)}", version, hip, cuda
        )
    if not devices:
        return TorchProbe("cpu", f"torch {version} reports no {backend} device", version, hip, cuda)
    names = ", ".join(f"{d.name} ({d.arch})" for d in devices)
    return TorchProbe(backend, f"torch {version} sees {names}", version, hip, cuda, tuple(devices))


def _bf16_supported(torch: Any, index: int) -> bool:
    try:
        with torch.cuda.device(index):
            return bool(torch.cuda.is_bf16_supported())
    except Exception:
        return False


def probe_ctranslate2() -> Ct2Probe:
    """Ask CTranslate2 itself how many CUDA devices it sees (never trust torch for this)."""
    try:
        import ctranslate2
    except ImportError as exc:
        return Ct2Probe(False, f"ctranslate2 is not installed ({exc})")
    except Exception as exc:
        return Ct2Probe(False, f"importing ctranslate2 failed: {_fail(exc)}")
    version = str(getattr(ctranslate2, "__version__", ""))
    types: dict[str, tuple[str, ...]] = {}
    try:
        types["cpu"] = tuple(sorted(ctranslate2.get_supported_compute_types("cpu")))
    except Exception as exc:
        return Ct2Probe(False, f"ctranslate2 CPU query failed: {_fail(exc)}", version)
    try:
        count = int(ctranslate2.get_cuda_device_count())
    except Exception as exc:
        return Ct2Probe(True, f"ctranslate2 CUDA query failed: {_fail(exc)}", version, 0, types)
    if count:
        try:
            types["cuda"] = tuple(sorted(ctranslate2.get_supported_compute_types("cuda")))
        except Exception as exc:
            log.warning("ctranslate2 sees %d CUDA device(s) but not their types: %s", count, exc)
        reason = f"ctranslate2 {version} sees {count} CUDA device(s)"
    else:
        reason = (
            f"ctranslate2 {version} sees no CUDA device (it has no ROCm build: "
            "on AMD GPUs it runs on the CPU)"
        )
    return Ct2Probe(True, reason, version, count, types)


def probe_onnxruntime() -> OnnxProbe:
    """onnxruntime's available execution providers."""
    try:
        import onnxruntime
    except ImportError as exc:
        return OnnxProbe(False, f"onnxruntime is not installed ({exc})")
    except Exception as exc:
        return OnnxProbe(False, f"importing onnxruntime failed: {_fail(exc)}")
    try:
        providers = tuple(onnxruntime.get_available_providers())
    except Exception as exc:
        return OnnxProbe(
            False, f"onnxruntime provider query failed: {_fail(exc)}", str(onnxruntime.__version__)
        )
    return OnnxProbe(
        True, f"providers: {', '.join(providers)}", str(onnxruntime.__version__), providers
    )


def parse_device(requested: str) -> tuple[str, int | None]:
    """ "auto" | "cpu" | "cuda" | "cuda:N" -> (kind, index or None). "gpu"/"rocm" mean cuda."""
    match = _DEVICE_RE.match(requested.strip().lower())
    if not match:
        raise DeviceError(
            f"unknown device {requested!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N' "
            "(ROCm GPUs are 'cuda' too)"
        )
    kind, index = match.group(1), match.group(2)
    if kind in ("gpu", "rocm"):
        kind = "cuda"
    if kind in ("auto", "cpu") and index is not None:
        raise DeviceError(f"device {requested!r} takes no index")
    return kind, (int(index) if index is not None else None)


def choose_torch_device(
    requested: str = "auto",
    dtype: str = "auto",
    probe: TorchProbe | None = None,
) -> DeviceChoice:
    """Pick the torch device and dtype for a request.

    ``dtype``: "auto" (float16 on GPU, float32 on CPU), "bfloat16" (used on a GPU that supports
    it, else float16 with the reason), "float16" or "float32". float16 on the CPU is slow and
    poorly supported, so the CPU always gets float32.
    """
    kind, index = parse_device(requested)
    if dtype not in ("auto", "float16", "bfloat16", "float32"):
        raise DeviceError(f"unknown dtype {dtype!r}: use auto, float16, bfloat16 or float32")
    if kind == "cpu":
        return DeviceChoice("cpu", "float32", "cpu requested", "cpu")
    probe = probe if probe is not None else probe_torch()
    if not probe.gpu:
        if kind == "auto":
            return DeviceChoice("cpu", "float32", f"no usable GPU: {probe.reason}", "cpu")
        raise DeviceError(f"device {requested!r} requested but {probe.reason}")
    index = 0 if index is None else index
    gpu = next((d for d in probe.devices if d.index == index), None)
    if gpu is None:
        raise DeviceError(
            f"device {requested!r} requested but torch has only "
            f"{len(probe.devices)} GPU(s): {', '.join(d.name for d in probe.devices)}"
        )
    why = f"{probe.backend} GPU {index}: {gpu.name} {gpu.arch}".rstrip()
    if dtype == "bfloat16" and not gpu.bf16:
        return DeviceChoice(
            f"cuda:{index}", "float16", f"{why}; no bfloat16 on it, float16", probe.backend
        )
    chosen = "float16" if dtype == "auto" else dtype
    return DeviceChoice(f"cuda:{index}", chosen, f"{why}; {chosen}", probe.backend)


_CT2_CPU_PREFERENCE = ("int8", "int8_float32", "float32")
_CT2_GPU_PREFERENCE = ("float16", "int8_float16", "bfloat16", "float32")


def choose_ct2_device(
    requested: str = "auto",
    compute_type: str = "auto",
    probe: Ct2Probe | None = None,
) -> Ct2Choice:
    """Pick the CTranslate2 device and compute type (int8 on CPU, float16 on CUDA)."""
    kind, index = parse_device(requested)
    probe = probe if probe is not None else probe_ctranslate2()
    if not probe.available:
        raise DeviceError(f"CTranslate2 is not usable: {probe.reason}")
    if kind == "auto":
        kind = "cuda" if probe.cuda_device_count else "cpu"
        why = probe.reason
    elif kind == "cuda":
        if not probe.cuda_device_count:
            raise DeviceError(f"device {requested!r} requested but {probe.reason}")
        if (index or 0) >= probe.cuda_device_count:
            raise DeviceError(
                f"device {requested!r} requested but ctranslate2 sees only "
                f"{probe.cuda_device_count} CUDA device(s)"
            )
        why = f"{requested} requested"
    else:
        why = "cpu requested"
    index = index or 0
    supported = probe.compute_types.get(kind, ())
    if compute_type == "auto":
        preference = _CT2_GPU_PREFERENCE if kind == "cuda" else _CT2_CPU_PREFERENCE
        compute_type = next((t for t in preference if t in supported), "default")
    elif supported and compute_type not in supported and compute_type != "default":
        raise DeviceError(
            f"compute_type {compute_type!r} is not supported on {kind} by ctranslate2 "
            f"{probe.version}; supported: {', '.join(supported)}"
        )
    return Ct2Choice(kind, index, compute_type, f"{why}; {compute_type}")


def summary() -> dict[str, Any]:
    """Every probe as plain data (for ``voiced doctor`` and start-up logs)."""
    return {
        "torch": probe_torch().to_dict(),
        "ctranslate2": probe_ctranslate2().to_dict(),
        "onnxruntime": probe_onnxruntime().to_dict(),
    }
