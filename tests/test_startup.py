"""Start-up honesty: a required part (a source, a service such as the Wyoming server) that
can't start makes the daemon exit non-zero with the reason, never READY and idle."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def voiced(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    return subprocess.run(
        [sys.executable, "-m", "voiced.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )


def test_a_missing_file_source_fails_the_start_with_the_reason(tmp_path):
    missing = tmp_path / "nothing-here.wav"
    result = voiced("--config", "tests/empty.toml", "run", "--source", f"file:{missing}")
    assert result.returncode == 2, result  # a configuration error, before any model loads
    assert f"--source file:{missing}: {missing}: no such file" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_a_busy_wyoming_port_fails_the_start_with_the_reason(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        config = tmp_path / "voiced.toml"
        config.write_text(
            '[pipeline]\nsource = []\nservice = ["wyoming"]\n'
            f'[stages.service.wyoming]\nuri = "tcp://127.0.0.1:{port}"\n'
        )
        result = voiced("--config", str(config), "run")
    assert result.returncode == 1, result
    assert "voiced: cannot start: service wyoming failed to start" in result.stderr
    assert f"cannot listen on tcp://127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
