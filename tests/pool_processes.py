"""A pool of real ``voiced worker`` processes behind the test's mosquitto (password login)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mqtt_fixtures import Mosquitto

POOL_CONFIG = """
log_level = "INFO"

[pipeline]
source = []
asr = ["mqtt-pool", "whisper-ctranslate2"]

[stages.asr.mqtt-pool]
timeout = {timeout}

[stages.asr.mqtt-pool.broker]
host = "127.0.0.1"
port = {port}
username = "{username}"
password = "{password}"
reconnect_min_delay = 0.2
reconnect_max_delay = 1.0
"""


TEST_DEADLINE = 60.0
"""A job's deadline in these tests: a worker on a busy 2-core machine (the suite, a burner,
the worker's constrained search for a misheard command) needed over 20 s; the deadline is not
what they test (tests of it set their own)."""


def pool_settings(broker: Mosquitto, timeout: float = TEST_DEADLINE) -> dict:
    """The ``[stages.asr.mqtt-pool]`` block as a dict, for an in-process front end."""
    return {
        "timeout": timeout,
        "broker": {
            "host": "127.0.0.1",
            "port": broker.auth_port,
            "username": broker.username,
            "password": broker.password,
            "reconnect_min_delay": 0.2,
            "reconnect_max_delay": 1.0,
        },
    }


def write_pool_config(folder: Path, broker: Mosquitto, timeout: float = TEST_DEADLINE) -> Path:
    path = folder / "pool.toml"
    path.write_text(
        POOL_CONFIG.format(
            port=broker.auth_port,
            username=broker.username,
            password=broker.password,
            timeout=timeout,
        )
    )
    return path


class WorkerProcess:
    def __init__(self, config: Path, worker_id: str, folder: Path) -> None:
        self.worker_id = worker_id
        self.log = folder / f"worker-{worker_id}.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
        env["PYTHONUNBUFFERED"] = "1"
        with self.log.open("ab") as out:
            command = [sys.executable, "-m", "voiced.cli", "--config", str(config), "worker"]
            self.process = subprocess.Popen(
                [*command, "--id", worker_id],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def terminate(self, timeout: float) -> float:
        """SIGTERM; seconds until the process ended (TimeoutExpired past ``timeout``)."""
        started = time.monotonic()
        self.process.terminate()
        self.process.wait(timeout)
        return time.monotonic() - started

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
