"""Other torch / transformers releases for the tests, each in a folder cached outside the clone.

The venv's torch is the CPU build (2.13.0+cpu, ~190 MB). Two other sets are installed with
``pip install --target`` into ``~/.cache/voiced-tests/<name>-<v>-...-py<X.Y>/`` (built when
missing, stamped ``.complete``) and put first on PYTHONPATH of a child process:

- ``TORCH_PAIR``: torch 2.14.1 + torchaudio 2.11.1. The only torchaudio the package index
  offers (2.11.1, ``torch>=2.11``) is a CUDA build, whose ``_torchaudio.so`` needs
  ``libc10_cuda.so`` and does not load beside a CPU torch; 2.14.1 is the newest torch the index
  here allows and loads it unmodified (stable ABI). Cold: 1 min 40 s to 3 min (by load), 5.4 GB
  (nvidia 3.2 GB, torch 1.2 GB, triton 0.9 GB).
- ``gpu_floors()``: the `gpu` extra's floors of torch and transformers together (read from
  pyproject.toml: torch 2.6.0, transformers 4.56.0). The index's only torch 2.6.0 for Linux is
  the CUDA 12.4 build (767 MB, with ~2.5 GB of ``nvidia-*-cu12`` and triton).

A CUDA build runs on the CPU when no GPU is there. Warm: nothing to install.
``python tests/torch_sites.py`` builds both (``scripts/test`` does, before pytest).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

TORCH_PAIR = {"torch": "2.14.1", "torchaudio": "2.11.1"}
CACHE = Path(os.environ.get("VOICED_TEST_CACHE", Path.home() / ".cache" / "voiced-tests"))
PYPROJECT = Path(__file__).parents[1] / "pyproject.toml"


def gpu_floor(package: str) -> str:
    """The ``>=`` floor of a package in the `gpu` extra of pyproject.toml, as X.Y.Z."""
    extra = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]["gpu"]
    spec = next(r for r in extra if re.match(rf"{package}\b", r))
    floor = re.search(r">=\s*([\w.]+)", spec).group(1)
    return floor if floor.count(".") >= 2 else f"{floor}.0"


def gpu_floors() -> dict[str, str]:
    """The floors of torch and transformers in the `gpu` extra: the oldest pair it allows."""
    return {name: gpu_floor(name) for name in ("torch", "transformers")}


def cached_site(pins: dict[str, str], timeout: float = 1800) -> Path:
    """A cached folder holding ``name==version`` for each pin, with what pip resolves for them."""
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    key = "-".join(f"{name}-{version}" for name, version in pins.items())
    target = CACHE / f"{key}-py{py}"
    if (target / ".complete").exists():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--target", str(partial)]
        + [f"{name}=={version}" for name, version in pins.items()],
        check=True,
        timeout=timeout,
    )
    (partial / ".complete").write_text(key)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def torchaudio_site() -> Path:
    """The cached folder holding ``TORCH_PAIR`` and their dependencies (built when missing)."""
    return cached_site(TORCH_PAIR)


def gpu_floors_site() -> Path:
    """The cached folder holding the `gpu` extra's floors of torch and transformers."""
    return cached_site(gpu_floors())


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
    print(gpu_floors_site())
