"""The `gpu` extra's floors of torch and transformers, with torchaudio, in one folder cached
outside the clone, for the tests that need a torch other than the venv's.

The venv's torch is the CPU build (2.13.0+cpu, ~190 MB, from a file on this machine's disk).
The package index has no CPU build of torch for Linux x86_64 and its torchaudio is a CUDA build,
whose ``_torchaudio.so`` needs ``libc10_cuda.so``: it does not load beside a CPU torch. So one
CUDA build of torch serves both users of another torch, run on the CPU (a CUDA build does when
no GPU is there):

- ``floors_site()``: torch 2.6.0 + torchaudio 2.6.0 + transformers 4.56.0, read from the `gpu`
  extra in pyproject.toml (torchaudio X.Y.Z is built for torch X.Y.Z). tests/test_gpu_extra.py
  loads both engines with it; tests/test_torchaudio.py checks torchaudio's numbers with it.
  Cold: ~2.5 GB downloaded, 5.4 GB on disk (nvidia 2.7 GB, torch 1.6 GB, triton 0.7 GB),
  80-130 s here; warm: nothing to install.
- ``transformers_floor_site()``: transformers 4.56.0 alone (with its own dependencies, no
  torch), to load on the venv's torch: ~0.1 GB, seconds.

Each is installed with ``pip install --target`` into
``~/.cache/voiced-tests/<name>-<version>-...-py<X.Y>/`` (stamped ``.complete``) and put first on
PYTHONPATH of a child process. ``python tests/torch_sites.py`` builds both (``scripts/test``
does, before pytest).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

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


def floors() -> dict[str, str]:
    """The `gpu` extra's floors of torch and transformers, and the torchaudio of that torch."""
    torch, transformers = gpu_floor("torch"), gpu_floor("transformers")
    return {"torch": torch, "torchaudio": torch, "transformers": transformers}


def floors_site() -> Path:
    """The cached folder holding ``floors()`` and their dependencies (built when missing)."""
    return cached_site(floors())


def transformers_floor_site() -> Path:
    """The cached folder holding the floor of transformers alone (the venv's torch loads it)."""
    return cached_site({"transformers": gpu_floor("transformers")})


def child_env(site: Path | None) -> dict[str, str]:
    """The environment for a child process that sees ``site`` before the venv (no VOICED_*)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(
            os.pathsep
        )
    return env


if __name__ == "__main__":
    print(floors_site())
    print(transformers_floor_site())
