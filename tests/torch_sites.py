"""torch + torchaudio for the tests that need torchaudio, cached outside the clone.

The venv's torch is the CPU build (2.13.0+cpu, ~190 MB): the only torchaudio the package
index offers (2.11.1, ``torch>=2.11``) is a CUDA build, whose ``_torchaudio.so`` needs
``libc10_cuda.so`` and does not load beside a CPU torch. So the torchaudio tests run in a child
process with ``TORCH_PAIR`` installed, with its CUDA libraries (a CUDA build runs on the CPU
when no GPU is there), into ``~/.cache/voiced-tests/torch-<v>-torchaudio-<v>-py<X.Y>/`` and
put first on PYTHONPATH. torch 2.14.1 is the newest the index here allows and loads
torchaudio 2.11.1 unmodified (stable ABI). Cold: one pip install, 1 min 40 s to 3 min (by
load), 5.4 GB (nvidia 3.2 GB, torch 1.2 GB, triton 0.9 GB); warm: nothing.

``python tests/torch_sites.py`` builds it (``scripts/test`` does, before pytest).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TORCH_PAIR = {"torch": "2.14.1", "torchaudio": "2.11.1"}
CACHE = Path(os.environ.get("VOICED_TEST_CACHE", Path.home() / ".cache" / "voiced-tests"))


def torchaudio_site() -> Path:
    """The cached folder holding ``TORCH_PAIR`` and their dependencies (built when missing)."""
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    pair = "-".join(f"{name}-{version}" for name, version in TORCH_PAIR.items())
    target = CACHE / f"{pair}-py{py}"
    if (target / ".complete").exists():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--target", str(partial)]
        + [f"{name}=={version}" for name, version in TORCH_PAIR.items()],
        check=True,
        timeout=1800,
    )
    (partial / ".complete").write_text(pair)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def child_env(site: Path | None) -> dict[str, str]:
    """The environment for a child process that sees ``site`` before the venv (no VOICED_*)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    return env


if __name__ == "__main__":
    print(torchaudio_site())
