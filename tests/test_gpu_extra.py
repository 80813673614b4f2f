"""The `gpu` extra's floors load both torch engines, and so do the newest releases.

Each load runs in a child process, with a set of releases from ``torch_sites`` (cached under
``~/.cache/voiced-tests/``, put first on PYTHONPATH) or the venv's own:

- the floors together: torch 2.6.0 (the index's CUDA 12.4 build, run on the CPU) with
  transformers 4.56.0, both read from the `gpu` extra in pyproject.toml;
- the floor of transformers on the venv's torch (2.13.0+cpu);
- the venv's transformers (the newest that `scripts/test` resolved) on the venv's torch, the
  newest CPU build of torch this machine has.

The child converts the bundled tiny.en to a transformers checkpoint, loads it with
whisper-transformers through ``from_pretrained`` and transcribes real speech; it builds the
tiny VITS model and speaks with vits-transformers. Cold: two pip installs (``scripts/test``
builds both folders before pytest; see torch_sites.py for time and size); warm: three child
processes (~60 s together).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from speech import steady_piper
from torch_sites import child_env, floors, floors_site, gpu_floor, transformers_floor_site

pytestmark = pytest.mark.slow
pytest.importorskip("transformers")

CHILD = r"""
import json, sys
from pathlib import Path
import torch, transformers
sys.path.insert(0, sys.argv[3])
from tiny_vits import build_random_vits
from voiced_plugins.asr_whisper.torch_engine import (
    WhisperTransformersAsr, WhisperTransformersOptions)
from voiced_plugins.tts_vits import VitsOptions, VitsTts

work = Path(sys.argv[1])
asr = WhisperTransformersAsr(WhisperTransformersOptions(cache_dir=str(work / "models")))
asr.load()
text = asr.transcribe(Path(sys.argv[2]).read_bytes()).text
tts = VitsTts(VitsOptions(model=str(build_random_vits(work / "vits")), device="cpu", seed=1))
tts.load()
chunk = tts.synthesize("Turn on the lights.")
print(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                  "text": text,
                  "vits_samples": chunk.samples, "vits_dtype": tts.dtype}))
"""


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
    version = gpu_floor("transformers")
    loaded = load_both(tmp_path, transformers_floor_site())
    assert loaded["transformers"] == version
    check(loaded)


def test_the_installed_newest_transformers_loads_both_engines(tmp_path):
    import transformers

    loaded = load_both(tmp_path, None)
    assert loaded["transformers"] == transformers.__version__
    check(loaded)


def test_the_floor_torch_and_transformers_together_load_both_engines(tmp_path):
    pins = floors()
    loaded = load_both(tmp_path, floors_site())
    assert loaded["torch"].split("+")[0] == pins["torch"]
    assert loaded["transformers"] == pins["transformers"]
    check(loaded)


def test_the_gpu_extra_floors_fit_transformers_and_torch_together():
    # transformers 5 disables itself below torch 2.6; from_pretrained(dtype=) needs 4.56
    assert tuple(int(p) for p in gpu_floor("torch").split(".")[:2]) >= (2, 6)
    assert tuple(int(p) for p in gpu_floor("transformers").split(".")[:2]) >= (4, 56)
