"""A stop that hangs ends the process anyway: ``voiced run`` given SIGTERM lives at most
``pipeline.shutdown_grace`` + ``STOP_MARGIN_S`` seconds, then prints every thread's stack to
stderr (the journal) and exits with status 1, below systemd's TimeoutStopSec and its SIGKILL.

The daemon is a real ``voiced run`` child reading the bundled sample; what hangs is the step that
closes its stages, as a device stuck inside the driver would.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from voiced.daemon import STOP_MARGIN_S

pytestmark = pytest.mark.slow

CONFIG = """
log_level = "INFO"

[pipeline]
source = ["file"]
sink = []
service = ["log"]
shutdown_grace = 0

[stages.source.file]
path = "bundled:sample"
realtime = true
loop = true
"""

A_STAGE_THAT_NEVER_CLOSES = """
import sys, time
from voiced import cli, pipeline

def a_device_stuck_in_its_driver(self):
    time.sleep(3600)

pipeline.Pipeline.close = a_device_stuck_in_its_driver
sys.exit(cli.main(sys.argv[1:]))
"""


def test_a_stop_that_hangs_ends_with_the_stacks_of_all_threads_and_status_1(tmp_path: Path):
    config = tmp_path / "voiced.toml"
    config.write_text(CONFIG)
    daemon = subprocess.Popen(
        [sys.executable, "-c", A_STAGE_THAT_NEVER_CLOSES, "--config", str(config), "run"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace",
    )  # fmt: skip
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert daemon.stderr is not None
        for line in daemon.stderr:
            lines.append(line)
            if "ready (" in line:
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(120), "".join(lines)
        daemon.send_signal(signal.SIGTERM)
        status = daemon.wait(STOP_MARGIN_S + 45)
    finally:
        daemon.kill()
    reader.join(10)
    log = "".join(lines)
    assert status == 1, log
    assert f"SIGTERM: stopping (at most {STOP_MARGIN_S:g} s)" in log
    assert f"Timeout (0:00:{STOP_MARGIN_S:02.0f})!" in log  # faulthandler's header
    assert "in a_device_stuck_in_its_driver" in log  # where it hung, on the stuck thread's stack
