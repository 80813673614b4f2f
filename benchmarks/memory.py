"""Memory and idle CPU of the daemon, as a separate process (``voiced run``).

- peak RSS: ``voiced run`` on the bundled sample (two spoken commands) with the default models
  loaded (whisper-ctranslate2 tiny.en, hassil + home, builtin handler, piper; no sink, no
  MQTT); peak RSS from ``wait4()`` (the kernel's ru_maxrss of that one child), and the time
  from process start to the ``ready`` event;
- idle CPU: the same daemon hearing silence (faint noise, -70 dBFS) at real-time pace, so only
  the listening loop (source + VAD) works: CPU seconds of the whole process from ``SETTLE_S``
  after ``ready`` (the answers made ahead once after start-up are done by then) to exit, per
  second, in percent of one core; the first ``SETTLE_S`` are reported beside it.

    python -m benchmarks.memory [--quick] [--idle-seconds 20] [--runs 3] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import CACHE, ROOT, Row, Section, format_table, stats, write_json

TICKS = os.sysconf("SC_CLK_TCK")
SETTLE_S = 15.0  # after ready: the one-off work of start-up (answers cached and made ahead)


def config_file() -> Path:
    """The daemon's default stages; no sink, no services (no MQTT broker, no log lines)."""
    home = ROOT / "config" / "home.yaml"
    handler = '["builtin"]' if _has_builtin_handler() else "[]"
    text = f"""# written by benchmarks/memory.py
[pipeline]
source = ["file"]
wake = []
vad = "webrtc"
asr = ["whisper-ctranslate2"]
intent = ["hassil"]
handler = {handler}
tts = ["piper"]
sink = []
service = []

[conversation]
follow_up = "off"

[stages.intent.hassil]
home = {json.dumps(str(home) if home.is_file() else "")}
"""
    path = CACHE / "memory" / "voiced.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _has_builtin_handler() -> bool:
    from benchmarks.common import ensure_importable

    ensure_importable()
    from voiced.plugins import load_plugins

    return load_plugins().stage_spec("handler", "builtin") is not None


def voiced_command() -> list[str]:
    script = Path(sys.executable).parent / "voiced"
    if script.is_file():
        return [str(script)]
    found = shutil.which("voiced")
    if found:
        return [found]
    return [sys.executable, "-m", "voiced.cli"]


def silence_file(seconds: float) -> Path:
    from voiced.audio import float_to_pcm16, write_wav

    path = CACHE / "memory" / f"silence-{seconds:g}s.wav"
    if not path.is_file():
        rng = np.random.default_rng(0)
        faint = rng.normal(0.0, 10 ** (-70 / 20), int(seconds * 16000))
        write_wav(path, float_to_pcm16(faint))
    return path


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def run_daemon(config: Path, *args: str, timeout: float = 180) -> dict[str, Any]:
    """Run ``voiced run`` to its end; peak RSS, CPU after ready, start-up time, events."""
    command = [*voiced_command(), "--config", str(config), "--log-level", "WARNING", "run"]
    command += ["--events", "json", *args]
    started = time.monotonic()
    proc = subprocess.Popen(
        command, cwd=CACHE / "memory", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    ready_at = cpu_at_ready = None
    events: list[str] = []
    at_settle: list[float | None] = []  # the CPU seconds SETTLE_S after ready, once sampled
    settled = threading.Timer(SETTLE_S, lambda: at_settle.append(_cpu_seconds(proc.pid)))
    settled.daemon = True
    deadline = started + timeout
    for line in proc.stdout:
        try:
            kind = json.loads(line).get("type")
        except ValueError:
            continue
        events.append(kind)
        if kind == "ready" and ready_at is None:
            ready_at = time.monotonic()
            cpu_at_ready = _cpu_seconds(proc.pid)
            settled.start()
        if time.monotonic() > deadline:
            proc.kill()
            break
    _pid, status, usage = os.wait4(proc.pid, 0)
    ended = time.monotonic()
    settled.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read() if proc.stderr else ""
    if proc.returncode != 0 or ready_at is None:
        raise RuntimeError(
            f"`{' '.join(command)}` failed (exit {proc.returncode}): {stderr.strip()[-800:]}"
        )
    cpu_total = usage.ru_utime + usage.ru_stime
    settle_cpu = at_settle[0] if at_settle else None
    return {
        "peak_rss_mib": usage.ru_maxrss / 1024,  # ru_maxrss is in KiB on Linux
        "startup_s": ready_at - started,
        "after_ready_s": ended - ready_at,
        "cpu_after_ready_s": cpu_total - (cpu_at_ready or 0.0),
        "cpu_settling_s": settle_cpu - (cpu_at_ready or 0.0) if settle_cpu else None,
        "cpu_after_settle_s": cpu_total - settle_cpu if settle_cpu else None,
        "cpu_total_s": cpu_total,
        "events": events,
    }


def run(runs: int = 3, idle_seconds: float = 20.0) -> Section:
    config = config_file()
    section = Section("memory")
    loaded = [run_daemon(config) for _ in range(runs)]
    answered = [r["events"].count("tts-audio") for r in loaded]
    section.rows.append(
        Row.of(
            "memory",
            "daemon peak RSS, default models loaded, bundled sample processed",
            "MiB",
            stats([r["peak_rss_mib"] for r in loaded]),
            note=f"answers spoken per run: {answered}",
        )
    )
    section.rows.append(
        Row.of(
            "memory",
            "daemon start-up: process start -> ready (imports, load, warm-up)",
            "ms",
            stats([r["startup_s"] for r in loaded]),
        )
    )
    idle = run_daemon(
        config, "--realtime", "--source", f"file:{silence_file(idle_seconds + SETTLE_S)}"
    )
    section.rows.append(idle_row(idle, idle_seconds))
    section.results = {"config": config.read_text(), "loaded": loaded, "idle": idle}
    for r in [*loaded, idle]:
        r.pop("events")
    return section


def idle_row(idle: dict[str, Any], idle_seconds: float) -> Row:
    """The listening loop's CPU once start-up's one-off work is done (that work in the note)."""
    settling, after = idle["cpu_settling_s"], idle["cpu_after_settle_s"]
    if after is None:
        raise RuntimeError(f"the daemon ended before {SETTLE_S:g} s after ready")
    window = idle["after_ready_s"] - SETTLE_S
    return Row(
        "idle",
        f"daemon CPU while hearing {idle_seconds:g} s of silence (listening loop)",
        "% of a core",
        round(100 * after / window, 2),
        runs=1,
        note=(
            f"{after:.2f} CPU s over the {window:.1f} s from {SETTLE_S:g} s after ready; the "
            f"first {SETTLE_S:g} s (answers made ahead once): {settling:.2f} CPU s; "
            f"peak RSS {idle['peak_rss_mib']:.0f} MiB"
        ),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 run, 8 s of silence")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--idle-seconds", type=float, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    idle = args.idle_seconds or (8.0 if args.quick else 20.0)
    section = run(runs, idle)
    print(format_table(section.rows))
    if args.json:
        write_json(args.json, section.to_dict())
    return 0


if __name__ == "__main__":
    sys.exit(main())
