"""Facts about this machine, independent of any library: PCI GPUs, KFD archs, device
nodes, the user's groups, and the fp16 test (matmul, conv1d, attention) run in a child process.

GPU work runs in a child process: a HIP runtime without kernels for the card aborts the
whole process, and the doctor must survive to say why.
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import pwd
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voiced.accel import TorchProbe
from voiced.doctor.gpu import DeviceNode, UserGroups, arch_from_target_version

# The three kinds of fp16 work the torch engines do (a Whisper encoder's first conv1d,
# attention as in its layers, a matmul), each against float32 on the CPU, on the device
# voiced.accel picks. A HIP runtime without kernels for the card aborts right here.
MATMUL_SCRIPT = r"""
import json, sys, time
import torch
import torch.nn.functional as F
from voiced.accel import choose_torch_device
if len(sys.argv) > 1:  # a device named by the caller (the tests run the numbers on the CPU)
    dev, name, arch, arch_list = torch.device(sys.argv[1]), sys.argv[1], "", []
else:
    choice = choose_torch_device("auto", "float16")
    assert choice.device != "cpu", choice.reason
    dev = torch.device(choice.device)
    props = torch.cuda.get_device_properties(dev)
    name, arch = props.name, getattr(props, "gcnArchName", "")
    arch_list = torch.cuda.get_arch_list()

def sync():
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)

def rel_error(fast, ref):
    return ((fast.float().cpu() - ref).abs().max() / ref.abs().max()).item()

torch.manual_seed(0)
a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
mel, weight = torch.randn(1, 80, 3000), torch.randn(384, 80, 3) / 16
q, k, v = (torch.randn(1, 6, 1500, 64) for _ in range(3))
ops = {
    "matmul": (lambda x, y: x @ y, (a, b)),
    "conv1d": (lambda x, w: F.conv1d(x, w, padding=1), (mel, weight)),
    "attention": (F.scaled_dot_product_attention, (q, k, v)),
}
errors = {}
for op_name, (op, args) in ops.items():
    fast = op(*(t.to(dev, torch.float16) for t in args))
    sync()
    errors[op_name] = rel_error(fast, op(*args))
a16, b16 = a.to(dev, torch.float16), b.to(dev, torch.float16)
reps = 20 if dev.type == "cuda" else 1  # the speed is a GPU's figure; a CPU checks numbers
start = time.perf_counter()
for _ in range(reps):
    c = a16 @ b16
sync()
seconds = time.perf_counter() - start
print(json.dumps({"device": name, "index": dev.index, "arch": arch, "errors": errors,
                  "max_rel_error": max(errors.values()),
                  "tflops": 2 * 1024**3 * reps / seconds / 1e12, "arch_list": arch_list}))
"""


def run_matmul(
    timeout: float = 180.0, device: str | None = None
) -> tuple[dict[str, Any] | None, int, str]:
    """Run MATMUL_SCRIPT in a child process: (its JSON, exit status, stderr).

    ``device`` names one (e.g. "cpu") instead of the GPU voiced.accel picks."""
    command = [sys.executable, "-c", MATMUL_SCRIPT, *([device] if device else [])]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
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
    """GPUs on the PCI bus, KFD archs, drivers loaded, and the device nodes."""
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
    """A present device node, its group and whether this process may use it."""
    try:
        gid = path.stat().st_gid
        group = grp.getgrgid(gid).gr_name
    except (OSError, KeyError):
        group = ""
    return DeviceNode(str(path), True, os.access(path, os.R_OK | os.W_OK), group)


def current_user_groups() -> UserGroups:
    """This process's user and its groups, now and in /etc/group."""
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
