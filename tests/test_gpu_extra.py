"""The `gpu` extra's floors load both torch engines, and so do the newest releases.

Each load runs in a child process: once with the venv's transformers (the newest that
`scripts/test` resolved), once with the floor of the `gpu` extra installed (with its own
dependencies) into ``~/.cache/voiced-tests/transformers-<floor>-py<X.Y>/`` and put first on
PYTHONPATH, both on the venv's torch (2.13.0+cpu, the oldest installable here at a sane
size: the index's torch 2.6 is a 767 MB CUDA build needing ~2.5 GB of CUDA libraries, see
docs/asr.md); and once with the newest torch the index here allows (2.14.1, from the cache of
``torch_sites``). The child converts the bundled tiny.en to a transformers checkpoint, loads
it with whisper-transformers through ``from_pretrained`` and transcribes real speech; it
builds the tiny VITS model and speaks with vits-transformers. Cold: one pip install (~1 min,
~150 MB; the torch 2.14.1 cache is shared with test_torchaudio.py); warm: three child
processes (~60 s together).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from speech import steady_piper
from torch_sites import TORCH_PAIR, child_env, torchaudio_site

pytestmark = pytest.mark.slow
pytest.importorskip("transformers")

ROOT = Path(__file__).parents[1]
CACHE = Path.home() / ".cache" / "voiced-tests"

CHILD = r"""
import json, sys
from pathlib import Path
import torch, transformers
sys.path.insert(0, sys.argv[3])
from tiny_vits import build_tiny_vits
from voiced_plugins.asr_whisper.torch_engine import (
    WhisperTransformersAsr, WhisperTransformersOptions)
from voiced_plugins.tts_vits import VitsOptions, VitsTts

work = Path(sys.argv[1])
asr = WhisperTransformersAsr(WhisperTransformersOptions(cache_dir=str(work / "models")))
asr.load()
text = asr.transcribe(Path(sys.argv[2]).read_bytes()).text
tts = VitsTts(VitsOptions(model=str(build_tiny_vits(work / "vits")), device="cpu", seed=1))
tts.load()
chunk = tts.synthesize("Turn on the lights.")
print(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                  "text": text,
                  "vits_samples": chunk.samples, "vits_dtype": tts.dtype}))
"""


def gpu_floor(package: str) -> str:
    """The ``>=`` floor of a package in the `gpu` extra of pyproject.toml."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["gpu"]
    spec = next(r for r in extra if re.match(rf"{package}\b", r))
    return re.search(r">=\s*([\w.]+)", spec).group(1)


def floor_site(version: str) -> Path:
    """transformers==version with its dependencies in a cached folder (built when missing)."""
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    target = CACHE / f"transformers-{version}-py{py}"
    if (target / ".complete").exists():
        return target
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--target",
            str(partial),
            f"transformers=={version}",
        ],
        check=True,
        timeout=900,
    )
    (partial / ".complete").write_text(version)
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def load_both(tmp_path: Path, site: Path | None) -> dict:
    speech = tmp_path / "kitchen.pcm"
    speech.write_bytes(steady_piper("Turn on the kitchen lights."))
    env = child_env(site)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), str(speech), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def check(loaded: dict) -> None:
    assert "kitchen" in loaded["text"].lower(), loaded
    assert loaded["vits_samples"] > 0 and loaded["vits_dtype"] == "float32"


def test_the_floor_transformers_of_the_gpu_extra_loads_both_engines(tmp_path):
    floor = gpu_floor("transformers")
    version = floor if floor.count(".") >= 2 else f"{floor}.0"
    loaded = load_both(tmp_path, floor_site(version))
    assert loaded["transformers"] == version
    check(loaded)


def test_the_installed_newest_transformers_loads_both_engines(tmp_path):
    import transformers

    loaded = load_both(tmp_path, None)
    assert loaded["transformers"] == transformers.__version__
    check(loaded)


def test_the_newest_torch_here_loads_both_engines(tmp_path):
    import transformers

    loaded = load_both(tmp_path, torchaudio_site())
    assert loaded["torch"].split("+")[0] == TORCH_PAIR["torch"]
    assert loaded["transformers"] == transformers.__version__
    check(loaded)


def test_the_gpu_extra_floors_fit_transformers_and_torch_together():
    # transformers 5 disables itself below torch 2.6; from_pretrained(dtype=) needs 4.56
    assert tuple(int(p) for p in gpu_floor("torch").split(".")[:2]) >= (2, 6)
    assert tuple(int(p) for p in gpu_floor("transformers").split(".")[:2]) >= (4, 56)
