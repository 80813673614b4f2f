"""A CPU install without the GPU extra: the GPU engine's absence is said once, at INFO, as
normal; the CPU engine serves."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from voiced.missing_extra import missing_gpu_module

ROOT = Path(__file__).parents[1]
SAMPLE = ROOT / "voiced/data/sample.wav"

# Python's own way to make a module absent: a None entry in sys.modules fails its import.
WITHOUT_GPU_EXTRA = (
    "import sys\n"
    "for name in ('torch', 'transformers', 'torchaudio', 'safetensors'):\n"
    "    sys.modules[name] = None\n"
    "from voiced.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_the_missing_module_is_found_behind_the_engines_own_error():
    try:
        try:
            import torch_that_is_not_there  # noqa: F401
        except ImportError as exc:
            exc.name = "torch"
            raise RuntimeError("whisper-transformers needs torch") from exc
    except RuntimeError as error:
        assert missing_gpu_module(error) == "torch"
    assert missing_gpu_module(RuntimeError("model file missing")) is None
    assert missing_gpu_module(ModuleNotFoundError("x", name="numpy")) is None


@pytest.mark.slow
def test_a_default_start_without_torch_says_once_at_info_that_the_cpu_engine_serves(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_GPU_EXTRA, "--log-level", "INFO", "run",
         "--source", f"file:{SAMPLE}", "--sink", f"wav:{tmp_path}"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    log = result.stderr
    lines = [line for line in log.splitlines() if "whisper-transformers" in line]
    assert len(lines) == 1, lines
    assert "INFO" in lines[0]
    assert "GPU engine not installed" in lines[0] and "using whisper-ctranslate2" in lines[0]
    assert "ModelError" not in log and "ERROR" not in log and "voiced[gpu]" not in log
    assert "engine='whisper-ctranslate2'" in log  # the CPU engine transcribed
