"""``voiced doctor``: a checklist of what voiced needs, with a fix for everything that fails.

Each check is a :class:`Check`: ``ok`` True (✓), False (✗) or None (! a warning). The
decisions (which ROCm override an arch needs, whether torchaudio matches torch, what a GPU
error means) are plain functions of probe results, so they are tested with the failure
cases themselves; the probes that gather those results run the real libraries. GPU work
(the fp16 matmul) runs in a child process: a HIP runtime without kernels for the card aborts
the whole process, and the doctor must survive to say why.

The modules, one concept each:

- :mod:`~voiced.doctor.checks`: :class:`Check`, :class:`Report` and the text rendering
- :mod:`~voiced.doctor.gpu`: what a GPU failure means and how to fix it (pure decisions)
- :mod:`~voiced.doctor.hardware`: PCI GPUs, KFD archs, device nodes, groups, the matmul child
- :mod:`~voiced.doctor.gpu_checks`: the GPU section (torch, devices, matmul, torchaudio)
- :mod:`~voiced.doctor.engines`: CTranslate2 and ONNX Runtime
- :mod:`~voiced.doctor.system`: Python, packages, PortAudio and sound devices
- :mod:`~voiced.doctor.models`: configured and bundled models, ``--load``
- :mod:`~voiced.doctor.languages`: each configured language, stage by stage
- :mod:`~voiced.doctor.runner`: :func:`diagnose`, plugins' checks and the command line

Everything public is re-exported here: plugins return ``voiced.doctor.Check``.
"""

from __future__ import annotations

from voiced.doctor.checks import MARKS, SECTIONS, TITLES, Check, Report, render
from voiced.doctor.engines import engine_checks
from voiced.doctor.gpu import (
    GPU_ERRORS,
    HSA_OVERRIDES,
    DeviceNode,
    UserGroups,
    arch_from_target_version,
    base_arch,
    device_access_check,
    diagnose_gpu_error,
    hsa_override_for,
    matmul_check,
    override_env_check,
    rocm_kernels_check,
    rocm_override_fix,
)
from voiced.doctor.gpu_checks import gpu_checks, torch_index, torchaudio_check
from voiced.doctor.hardware import (
    MATMUL_SCRIPT,
    VENDORS,
    GpuHardware,
    current_user_groups,
    gpu_absent_reason,
    run_matmul,
    scan_hardware,
)
from voiced.doctor.languages import language_checks
from voiced.doctor.models import (
    BUNDLED_MODELS,
    PATH_KEYS,
    bundled_model_checks,
    load_checks,
    model_checks,
)
from voiced.doctor.runner import (
    HELP,
    audio_needed,
    configure_doctor_parser,
    diagnose,
    gpu_requested,
    main,
    plugin_checks,
    run_doctor,
)
from voiced.doctor.system import CORE_PACKAGES, GPU_PACKAGES, audio_checks, python_checks

__all__ = [
    "BUNDLED_MODELS",
    "CORE_PACKAGES",
    "GPU_ERRORS",
    "GPU_PACKAGES",
    "HELP",
    "HSA_OVERRIDES",
    "MARKS",
    "MATMUL_SCRIPT",
    "PATH_KEYS",
    "SECTIONS",
    "TITLES",
    "VENDORS",
    "Check",
    "DeviceNode",
    "GpuHardware",
    "Report",
    "UserGroups",
    "arch_from_target_version",
    "audio_checks",
    "audio_needed",
    "base_arch",
    "bundled_model_checks",
    "configure_doctor_parser",
    "current_user_groups",
    "device_access_check",
    "diagnose",
    "diagnose_gpu_error",
    "engine_checks",
    "gpu_absent_reason",
    "gpu_checks",
    "gpu_requested",
    "hsa_override_for",
    "language_checks",
    "load_checks",
    "main",
    "matmul_check",
    "model_checks",
    "override_env_check",
    "plugin_checks",
    "python_checks",
    "render",
    "rocm_kernels_check",
    "rocm_override_fix",
    "run_doctor",
    "run_matmul",
    "scan_hardware",
    "torch_index",
    "torchaudio_check",
]
