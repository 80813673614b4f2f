"""``voiced run`` as a real child process for the soak and fault probes: its JSON event lines
(stdout), its log (stderr, kept whole in a file and counted), and what /proc says it holds."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Usage:
    """What the daemon holds at one moment, from /proc."""

    at: float  # seconds since the daemon started
    rss_kb: int
    threads: int
    fds: int
    cpu_s: float  # user + system CPU time so far


def usage(pid: int, since: float = 0.0) -> Usage:
    status = Path(f"/proc/{pid}/status").read_text()
    rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return Usage(
        at=time.monotonic() - since,
        rss_kb=rss,
        threads=len(os.listdir(f"/proc/{pid}/task")),
        fds=len(os.listdir(f"/proc/{pid}/fd")),
        cpu_s=(int(stat[11]) + int(stat[12])) / ticks,
    )


class DaemonProcess:
    """A ``voiced --config FILE run`` child: stdin a pipe (for the stdin source), stdout read
    as JSON event lines (``[stages.service.log] format = "json"``), stderr into ``log``."""

    def __init__(self, config: Path, log: Path, nofile: int | None = None) -> None:
        self.log_path = log
        self.events: list[dict[str, Any]] = []
        self.other_stdout: list[bytes] = []
        self.cond = threading.Condition()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VOICED_", "NOTIFY_"))}
        env["PYTHONUNBUFFERED"] = "1"
        env["MALLOC_ARENA_MAX"] = "2"  # as the systemd unit runs the daemon

        def limit_fds() -> None:  # in the child, before exec
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self._log_file = log.open("wb")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "voiced.cli", "--config", str(config), "run"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            env=env,
            preexec_fn=limit_fds if nofile is not None else None,
        )
        self.pid = self.proc.pid
        self._reader = threading.Thread(target=self._read_events, daemon=True)
        self._reader.start()

    def _read_events(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            with self.cond:
                if isinstance(event, dict) and "type" in event:
                    self.events.append(event)
                else:
                    self.other_stdout.append(line)
                self.cond.notify_all()

    def wait_event(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = 120.0):
        """The first event printed so far (or within ``timeout``) that satisfies predicate."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                found = next((e for e in self.events if predicate(e)), None)
                if found is not None:
                    return found
                if self.proc.poll() is not None:
                    raise AssertionError(f"voiced exited ({self.proc.returncode}):\n{self.tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no such event in {timeout} s:\n{self.tail()}")
                self.cond.wait(min(left, 0.2))

    def ready(self, timeout: float = 180.0) -> None:
        self.wait_event(lambda e: e["type"] == "ready", timeout)

    def usage(self) -> Usage:
        return usage(self.pid, self.started)

    def log_lines(self) -> list[str]:
        if not self._log_file.closed:
            self._log_file.flush()
        return self.log_path.read_text(errors="replace").splitlines()

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.log_lines()[-n:])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM, as systemd stops it; the exit status (killed after ``timeout``)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):  # a reader gone: nothing left to tell
                self.proc.stdin.close()
        self._reader.join(10)
        self._log_file.close()
        return self.proc.returncode
