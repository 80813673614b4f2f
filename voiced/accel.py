"""Device probing in one place: which accelerator each engine library can use, and why.

Every library is asked on its own terms: torch for torch engines (ROCm shows up as
``torch.cuda`` with ``torch.version.hip`` set), CTranslate2 for CTranslate2 (its PyPI wheels
are CUDA builds; the ROCm/HIP builds from its release assets answer the same ``cuda`` API,
so the build is told apart by the libraries it links), onnxruntime for its providers.
Nothing heavy is imported at module import time; each probe imports its library inside the
function and reports a missing or broken library as ``unavailable`` with the reason.

Decision rule for an explicit request that cannot be honoured (``device = "cuda:1"`` on a
machine without that device): :class:`DeviceError`, naming what was found. The fallback chain
of the pipeline then lets the next engine serve, with an event that says so. ``"auto"`` never
fails: it picks the GPU when the library sees one and the CPU otherwise, with the reason.
"""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import os
import re
import struct
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
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
    bf16: bool = False  # from the arch (bf16_for_arch), not torch.cuda.is_bf16_supported()
    integrated: bool = False  # an APU's iGPU (e.g. a Ryzen's Radeon Graphics)


@dataclass(frozen=True)
class TorchProbe:
    backend: str  # "rocm" | "cuda" | "cpu" | "unavailable"
    reason: str = ""
    version: str = ""
    hip_version: str = ""
    cuda_version: str = ""
    devices: tuple[GpuInfo, ...] = ()
    arch_list: tuple[str, ...] = ()  # torch.cuda.get_arch_list(): what this build has kernels for
    hsa_override: str = ""  # HSA_OVERRIDE_GFX_VERSION, e.g. "10.3.0": kernels for gfx1030 serve

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
    build: str = ""  # "cuda" (PyPI), "rocm" (HIP build from the release assets), "cpu", "" unknown

    @property
    def gpu_backend(self) -> str:
        """What its ``cuda`` device really is: "rocm" for a HIP build, else "cuda"."""
        return "rocm" if self.build == "rocm" else "cuda"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class OnnxProbe:
    available: bool
    reason: str = ""
    version: str = ""
    providers: tuple[str, ...] = ()
    distributions: tuple[str, ...] = ()  # installed dists that ship the onnxruntime package

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

    device: str  # "cpu" | "cuda" (CTranslate2's name for a HIP device too)
    device_index: int
    compute_type: str
    reason: str
    backend: str = "cpu"  # "cpu" | "cuda" | "rocm"

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
                GpuInfo(
                    i,
                    props.name,
                    arch,
                    int(props.total_memory),
                    bf16_for_arch(arch),
                    bool(getattr(props, "is_integrated", False)),
                )
            )
        arch_list = tuple(torch.cuda.get_arch_list())
    except Exception as exc:  # HIP/CUDA runtime errors surface here, not at import
        return TorchProbe(
            "cpu", f"torch {version} GPU query failed: {_fail(exc)}", version, hip, cuda
        )
    if not devices:
        return TorchProbe("cpu", f"torch {version} reports no {backend} device", version, hip, cuda)
    names = ", ".join(f"{d.name} ({d.arch})" for d in devices)
    override = os.environ.get("HSA_OVERRIDE_GFX_VERSION", "") if hip else ""
    return TorchProbe(
        backend,
        f"torch {version} sees {names}",
        version,
        hip,
        cuda,
        tuple(devices),
        arch_list,
        override,
    )


def base_arch(arch: str) -> str:
    """``gfx1031:sramecc-:xnack-`` -> ``gfx1031``."""
    return arch.split(":", 1)[0].strip()


# gfx archs with bfloat16 arithmetic: CDNA (MI100 gfx908, MI200 gfx90a, MI300 gfx94x, MI350
# gfx95x) and RDNA3 onwards (gfx11xx, gfx12xx). RDNA1/2 (gfx101x, gfx103x), Vega and the
# APUs before RDNA3 have none: torch.cuda.is_bf16_supported() says True on every ROCm build.
_BF16_GFX = re.compile(r"^gfx(908|90a|94\d|95\d|11\d\d|12\d\d)$")


def bf16_for_arch(arch: str) -> bool:
    """Whether a GPU computes in bfloat16, from its arch (``gfx1100``, ``sm_86``)."""
    arch = base_arch(arch).lower()
    if arch.startswith("sm_"):
        digits = arch[3:]
        return digits[:-1].isdigit() and int(digits[:-1]) >= 8  # Ampere (sm_80) onwards
    return bool(_BF16_GFX.match(arch))


def has_kernels(arch: str, arch_list: Iterable[str]) -> bool:
    """Whether a torch build's kernel list covers a device; an empty list is not held against it.

    ROCm needs the exact gfx target. CUDA runs sm_XY kernels on any sm_XZ with Z >= Y of the
    same major, and JIT-compiles PTX (``compute_XY``) for any newer GPU.
    """
    archs = {base_arch(a).lower() for a in arch_list}
    arch = base_arch(arch).lower()
    if not archs or not arch or arch in archs:
        return True
    if not arch.startswith("sm_") or not arch[3:].isdigit():
        return False
    major, minor = divmod(int(arch[3:]), 10)
    for entry in archs:
        kind, _, digits = entry.partition("_")
        if not digits.isdigit():
            continue
        e_major, e_minor = divmod(int(digits), 10)
        if kind == "sm" and e_major == major and e_minor <= minor:
            return True
        if kind == "compute" and (e_major, e_minor) <= (major, minor):
            return True
    return False


def override_arch(version: str) -> str:
    """HSA_OVERRIDE_GFX_VERSION ``10.3.0`` -> ``gfx1030`` (the target whose kernels then run)."""
    parts = version.strip().split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return ""
    major, minor, stepping = (int(p) for p in parts)
    return f"gfx{major}{minor}{stepping:x}"


def covered(gpu: GpuInfo, probe: TorchProbe) -> bool:
    """Whether this torch build can run on the GPU, counting an HSA override's target."""
    if has_kernels(gpu.arch, probe.arch_list):
        return True
    target = override_arch(probe.hsa_override) if probe.hsa_override else ""
    return bool(target) and has_kernels(target, probe.arch_list)


def _gib(size: int) -> str:
    return f"{size / (1 << 30):.0f} GiB"


def _describe(gpu: GpuInfo) -> str:
    facts = ", ".join(
        f for f in (gpu.arch, _gib(gpu.total_memory) if gpu.total_memory else "") if f
    )
    return f"GPU {gpu.index}: {gpu.name}" + (f" ({facts})" if facts else "")


def pick_gpu(probe: TorchProbe) -> tuple[GpuInfo | None, str]:
    """The device a torch engine should use when none is named, and why.

    A device this torch build has no kernels for is passed over (it would fail with
    hipErrorNoBinaryForGpu); an integrated GPU only serves when no discrete one can; among
    the rest the one with the most memory wins (the lowest index on a tie).
    """
    usable = [d for d in probe.devices if covered(d, probe)]
    discrete = [d for d in usable if not d.integrated]
    pool = discrete or usable
    passed = []
    for gpu in probe.devices:
        if gpu not in usable:
            passed.append(
                f"{_describe(gpu)}: no kernels for {base_arch(gpu.arch)} in this torch build"
            )
        elif gpu not in pool:
            passed.append(f"{_describe(gpu)}: integrated")
    if not pool:
        kernels = ", ".join(sorted({base_arch(a) for a in probe.arch_list}))
        return None, f"torch has kernels only for {kernels}; " + "; ".join(passed)
    best = min(pool, key=lambda d: (-d.total_memory, d.index))
    passed += [f"{_describe(d)}: less memory" for d in pool if d is not best]
    why = f"{probe.backend} {_describe(best)}"
    if len(pool) > 1:
        why += ", the most memory"
    if passed:
        why += "; passed over " + "; ".join(passed)
    return best, why


def probe_ctranslate2() -> Ct2Probe:
    """Ask CTranslate2 itself how many GPUs it sees (never trust torch for this)."""
    try:
        import ctranslate2
    except ImportError as exc:
        return Ct2Probe(False, f"ctranslate2 is not installed ({exc})")
    except Exception as exc:
        return Ct2Probe(False, f"importing ctranslate2 failed: {_fail(exc)}")
    version = str(getattr(ctranslate2, "__version__", ""))
    build = ct2_build(Path(ctranslate2.__file__).parent)
    types: dict[str, tuple[str, ...]] = {}
    try:
        types["cpu"] = tuple(sorted(ctranslate2.get_supported_compute_types("cpu")))
    except Exception as exc:
        return Ct2Probe(False, f"ctranslate2 CPU query failed: {_fail(exc)}", version, build=build)
    try:
        count = int(ctranslate2.get_cuda_device_count())
    except Exception as exc:
        return Ct2Probe(
            True, f"ctranslate2 GPU query failed: {_fail(exc)}", version, 0, types, build
        )
    if count:
        try:
            types["cuda"] = tuple(sorted(ctranslate2.get_supported_compute_types("cuda")))
        except Exception as exc:
            log.warning("ctranslate2 sees %d GPU(s) but not their compute types: %s", count, exc)
    return Ct2Probe(True, ct2_reason(version, build, count), version, count, types, build)


_CT2_BUNDLED = {"rocm": ("amdhip64", "hipblas", "rocblas"), "cuda": ("cublas", "cudart")}
# GPU code lives in its own ELF sections: HIP's offload bundle, or CUDA's fat binary
_FATBIN_SECTIONS = {
    "rocm": (".hip_fatbin", ".hipFatBinSegment"),
    "cuda": (".nv_fatbin", ".nvFatBinSegment"),
}


@functools.lru_cache(maxsize=8)
def ct2_build(package_dir: Path) -> str:
    """Which GPU runtime a CTranslate2 install is built for: "rocm", "cuda" or "cpu".

    Both builds answer ``get_cuda_device_count()``. Bundled libraries (``ctranslate2.libs``)
    are told by name; otherwise the core library's ELF sections say whether it carries HIP or
    CUDA device code ("" when there is no library to read).
    """
    folders = [package_dir, package_dir.parent / f"{package_dir.name}.libs"]
    files = [f for d in folders if d.is_dir() for f in d.iterdir() if f.is_file()]
    bundled = _bundled_build(files)
    if bundled is not None:
        return bundled
    cores = [f for f in files if f.name.startswith(("libctranslate2", "_ext"))]
    sections = {name for core in cores for name in elf_sections(core)}
    for build, names in _FATBIN_SECTIONS.items():
        if sections & set(names):
            return build
    return "cpu" if sections else ""


def _bundled_build(files: list[Path]) -> str | None:
    """The GPU runtime told by the names of a CTranslate2 install's bundled libraries."""
    for build, names in _CT2_BUNDLED.items():
        if any(n in f.name for f in files for n in names):
            return build
    return None


def elf_sections(path: Path) -> list[str]:
    """The section names of a 64-bit little-endian ELF file; [] for anything else."""
    try:
        with path.open("rb") as fh:
            head = fh.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return []
            (offset,) = struct.unpack_from("<Q", head, 0x28)
            entry, count, names_index = struct.unpack_from("<HHH", head, 0x3A)
            fh.seek(offset)
            table = fh.read(entry * count)
            if entry < 64 or len(table) < entry * count or names_index >= count:
                return []
            name_offset, name_size = struct.unpack_from("<QQ", table, names_index * entry + 24)
            fh.seek(name_offset)
            names = fh.read(name_size)
    except OSError:
        return []
    found = []
    for i in range(count):
        (start,) = struct.unpack_from("<I", table, i * entry)
        end = names.find(b"\0", start)
        if 0 <= start < len(names) and end > start:
            found.append(names[start:end].decode("ascii", "replace"))
    return found


def ct2_reason(version: str, build: str, count: int) -> str:
    """What a CTranslate2 install can run on, in one sentence."""
    label = {"rocm": "ROCm/HIP build", "cuda": "CUDA build", "cpu": "CPU-only build"}.get(build)
    name = f"ctranslate2 {version}" + (f" ({label})" if label else "")
    if count:
        kind = "ROCm" if build == "rocm" else "CUDA"
        return f"{name} sees {count} {kind} device(s)"
    if build == "rocm":
        return f"{name} sees no AMD GPU (check /dev/kfd access and HSA_OVERRIDE_GFX_VERSION)"
    return (
        f"{name} sees no CUDA device (PyPI has no ROCm build: on an AMD GPU it runs on the "
        "CPU unless the ROCm wheel from CTranslate2's release assets is installed)"
    )


# Distributions that all install the same ``onnxruntime`` package: a second one overwrites
# the first one's files (faster-whisper and piper-tts pull in plain onnxruntime).
ONNX_DISTRIBUTIONS = (
    "onnxruntime",
    "onnxruntime-gpu",
    "onnxruntime-migraphx",
    "onnxruntime-rocm",
    "onnxruntime-openvino",
    "onnxruntime-directml",
    "onnxruntime-qnn",
)


def onnx_distributions() -> tuple[str, ...]:
    """Which onnxruntime distributions are installed (more than one means trouble)."""
    found = []
    for name in ONNX_DISTRIBUTIONS:
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        found.append(name)
    return tuple(found)


def probe_onnxruntime() -> OnnxProbe:
    """onnxruntime's available execution providers, and which distributions supply it."""
    dists = onnx_distributions()
    try:
        import onnxruntime
    except ImportError as exc:
        return OnnxProbe(False, f"onnxruntime is not installed ({exc})", distributions=dists)
    except Exception as exc:
        return OnnxProbe(False, f"importing onnxruntime failed: {_fail(exc)}", distributions=dists)
    version = str(onnxruntime.__version__)
    try:
        providers = tuple(onnxruntime.get_available_providers())
    except Exception as exc:
        return OnnxProbe(
            False, f"onnxruntime provider query failed: {_fail(exc)}", version, (), dists
        )
    return OnnxProbe(True, f"providers: {', '.join(providers)}", version, providers, dists)


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

    The device: the one named (``cuda:N``), else :func:`pick_gpu`'s (kernels for this build,
    discrete before integrated, most memory). ``dtype``: "auto" (float16 on GPU, float32 on
    CPU), "bfloat16" (on a GPU whose arch has it, else float16 with the reason), "float16" or
    "float32". float16 on the CPU is slow and poorly supported, so the CPU always gets float32.
    """
    kind, index = parse_device(requested)
    if dtype not in ("auto", "float16", "bfloat16", "float32"):
        raise DeviceError(f"unknown dtype {dtype!r}: use auto, float16, bfloat16 or float32")
    if kind == "cpu":
        return DeviceChoice("cpu", "float32", "cpu requested", "cpu")
    probe = probe if probe is not None else probe_torch()
    if not probe.gpu:
        return _torch_cpu_fallback(requested, kind, probe.reason)
    if index is None:
        gpu, why = pick_gpu(probe)
        if gpu is None:
            return _torch_cpu_fallback(requested, kind, why)
    else:
        gpu, why = _named_torch_gpu(requested, index, probe)
    return _torch_dtype_choice(gpu, why, dtype, probe)


def _torch_cpu_fallback(requested: str, kind: str, why: str) -> DeviceChoice:
    """The CPU when no GPU serves and none was asked for; a GPU asked for raises."""
    if kind == "auto":
        return DeviceChoice("cpu", "float32", f"no usable GPU: {why}", "cpu")
    raise DeviceError(f"device {requested!r} requested but {why}")


def _named_torch_gpu(requested: str, index: int, probe: TorchProbe) -> tuple[GpuInfo, str]:
    """The GPU named by index, and why; raises when torch lacks it or has no kernels for it."""
    gpu = next((d for d in probe.devices if d.index == index), None)
    if gpu is None:
        raise DeviceError(
            f"device {requested!r} requested but torch has only "
            f"{len(probe.devices)} GPU(s): {', '.join(d.name for d in probe.devices)}"
        )
    if not covered(gpu, probe):
        raise DeviceError(
            f"device {requested!r} ({gpu.name} {gpu.arch}) has no kernels in this torch "
            f"build (it has {', '.join(sorted({base_arch(a) for a in probe.arch_list}))})"
        )
    return gpu, f"{probe.backend} {_describe(gpu)}"


def _torch_dtype_choice(gpu: GpuInfo, why: str, dtype: str, probe: TorchProbe) -> DeviceChoice:
    """The choice of ``gpu`` with the dtype asked for (float16 where it has no bfloat16)."""
    device = f"cuda:{gpu.index}"
    if dtype == "bfloat16" and not gpu.bf16:
        return DeviceChoice(
            device,
            "float16",
            f"{why}; no bfloat16 on {base_arch(gpu.arch) or 'it'}, float16",
            probe.backend,
        )
    chosen = "float16" if dtype == "auto" else dtype
    return DeviceChoice(device, chosen, f"{why}; {chosen}", probe.backend)


def from_pretrained_dtype(transformers_version: str, dtype: Any) -> dict[str, Any]:
    """The ``from_pretrained`` keyword for a dtype: ``dtype`` from transformers 4.56 on.

    Older releases take ``torch_dtype`` and pass an unknown ``dtype`` into the model config,
    which then fails to save ("Object of type dtype is not JSON serializable").
    """
    numbers = re.findall(r"\d+", transformers_version)[:2]
    major, minor = (int(n) for n in [*numbers, "0", "0"][:2])
    return {"dtype": dtype} if (major, minor) >= (4, 56) else {"torch_dtype": dtype}


_CT2_CPU_PREFERENCE = ("int8", "int8_float32", "float32")
_CT2_GPU_PREFERENCE = ("float16", "int8_float16", "bfloat16", "float32")


def choose_ct2_device(
    requested: str = "auto",
    compute_type: str = "auto",
    probe: Ct2Probe | None = None,
) -> Ct2Choice:
    """Pick the CTranslate2 device and compute type (int8 on CPU, float16 on a GPU).

    A ROCm/HIP build of CTranslate2 calls its devices ``cuda`` too; the choice's ``backend``
    says "rocm" for it.
    """
    kind, index = parse_device(requested)
    probe = probe if probe is not None else probe_ctranslate2()
    if not probe.available:
        raise DeviceError(f"CTranslate2 is not usable: {probe.reason}")
    kind, why = _ct2_kind(requested, kind, index, probe)
    compute_type = _ct2_compute_type(kind, compute_type, probe)
    backend = probe.gpu_backend if kind == "cuda" else "cpu"
    return Ct2Choice(kind, index or 0, compute_type, f"{why}; {compute_type}", backend)


def _ct2_kind(requested: str, kind: str, index: int | None, probe: Ct2Probe) -> tuple[str, str]:
    """The CTranslate2 device kind ("cuda" or "cpu") for a request, and why; raises when a
    GPU asked for is not there."""
    if kind == "auto":
        return ("cuda" if probe.cuda_device_count else "cpu"), probe.reason
    if kind != "cuda":
        return kind, "cpu requested"
    if not probe.cuda_device_count:
        raise DeviceError(f"device {requested!r} requested but {probe.reason}")
    if (index or 0) >= probe.cuda_device_count:
        raise DeviceError(
            f"device {requested!r} requested but ctranslate2 sees only "
            f"{probe.cuda_device_count} GPU(s)"
        )
    return kind, f"{requested} requested ({probe.reason})"


def _ct2_compute_type(kind: str, compute_type: str, probe: Ct2Probe) -> str:
    """The compute type for ``kind``: the preferred supported one for "auto"; one asked for
    that this CTranslate2 does not support raises."""
    supported = probe.compute_types.get(kind, ())
    if compute_type == "auto":
        preference = _CT2_GPU_PREFERENCE if kind == "cuda" else _CT2_CPU_PREFERENCE
        return next((t for t in preference if t in supported), "default")
    if supported and compute_type not in supported and compute_type != "default":
        raise DeviceError(
            f"compute_type {compute_type!r} is not supported on {kind} by ctranslate2 "
            f"{probe.version}; supported: {', '.join(supported)}"
        )
    return compute_type


def summary() -> dict[str, Any]:
    """Every probe as plain data (for ``voiced doctor`` and start-up logs)."""
    return {
        "torch": probe_torch().to_dict(),
        "ctranslate2": probe_ctranslate2().to_dict(),
        "onnxruntime": probe_onnxruntime().to_dict(),
    }
