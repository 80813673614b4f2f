"""Streaming to a remote Wyoming ASR: VAD end -> transcript with the speech sent while it is
spoken (``stream = true``) vs the whole utterance sent at the VAD end (``stream = false``).

A front-end pipeline hears a file at the pace of speech (as from a microphone): a few
commands with pauses between them. Its ASR chain is a remote service on 127.0.0.1 (a second
voiced, and ``wyoming-faster-whisper`` when installed), then local tiny.en. The two modes
alternate, pipeline by pipeline, in the same run; per mode: the ``transcript`` event's
``latency_s`` (VAD end -> transcript) of every command. Early commit is off in both (its
speculative passes would hit the remote during pauses and blur the comparison).

    python -m benchmarks.remote_stream [--quick] [--rounds 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import Row, Section, ensure_importable, stats
from benchmarks.peers import console_script, faster_whisper_command

COMMANDS = [
    "turn on the kitchen lights",
    "set a timer for five minutes",
    "turn off the lamp in the bedroom",
    "what time is it",
]

REMOTE_VOICED = """
site_id = "gpu-box"
[pipeline]
source = []
asr = ["whisper-ctranslate2"]
intent = []
handler = []
tts = ["piper"]
service = ["wyoming"]
[stages.service.wyoming]
uri = "tcp://127.0.0.1:{port}"
services = ["asr"]
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(process: subprocess.Popen, port: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"remote exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"remote not listening on {port} after {timeout} s")


def start_remote(kind: str, folder: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    if kind == "voiced":
        config = folder / "remote.toml"
        config.write_text(REMOTE_VOICED.format(port=port))
        command = [sys.executable, "-m", "voiced.cli", "--config", str(config), "run"]
    else:
        from voiced_plugins.asr_whisper.models import bundled_ct2_dir

        head = console_script("wyoming-faster-whisper", "wyoming_faster_whisper")
        command = faster_whisper_command(head, port, bundled_ct2_dir("tiny.en"), folder / "fw-data")
    log = (folder / f"{kind}.log").open("ab")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    wait_listening(process, port)
    return process, f"tcp://127.0.0.1:{port}"


def faster_whisper_installed() -> bool:
    try:
        import wyoming_faster_whisper  # noqa: F401
    except ImportError:
        return False
    return True


def speech_file(folder: Path) -> Path:
    """The commands one after another, 1.5 s apart, 16 kHz mono."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from speech import silence, steady_piper

    from voiced.audio import write_wav

    pcm = silence(0.5) + b"".join(steady_piper(text) + silence(1.5) for text in COMMANDS)
    path = folder / "commands.wav"
    write_wav(path, pcm)
    return path


async def one_pass(path: Path, uri: str, stream: bool) -> list[dict[str, Any]]:
    """One front end over the file; the transcript events of its commands."""
    from voiced.config import deep_merge
    from voiced.daemon import prepare
    from voiced.hookspecs import hookimpl
    from voiced.pipeline import Pipeline

    class Transcripts:
        def __init__(self) -> None:
            self.seen: list[dict[str, Any]] = []

        @hookimpl
        def voiced_event(self, event: Any) -> None:
            if event.type == "transcript":
                self.seen.append(dict(event.data))

    empty = Path(tempfile.mkdtemp()) / "empty.toml"
    empty.write_text("")
    config = deep_merge(
        {},
        {
            "pipeline": {
                "source": ["file"],
                "asr": [f"wyoming:{uri}", "whisper-ctranslate2"],
                "intent": [],
                "handler": [],
                "tts": ["piper"],
                "service": [],
            },
            "vad": {"early_commit": False},
            "stages": {
                "source": {"file": {"path": str(path), "realtime": True}},
                "asr": {"wyoming": {"stream": stream, "timeout": 20.0}},
            },
        },
    )
    recorder = Transcripts()
    settings, host = prepare(empty, config, [("transcripts", recorder)])
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    try:
        await asyncio.wait_for(pipeline.run(), 300)
    finally:
        await pipeline.stop()
    return recorder.seen


def measure(remotes: list[str], rounds: int) -> Section:
    ensure_importable()
    section = Section("remote-stream")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = speech_file(folder)
        for kind in remotes:
            process, uri = start_remote(kind, folder)
            latencies: dict[bool, list[float]] = {True: [], False: []}
            misses = {True: 0, False: 0}
            early: list[float] = []
            try:
                for _ in range(rounds):
                    for stream in (True, False):
                        seen = asyncio.run(one_pass(path, uri, stream))
                        for data in seen:
                            if not str(data.get("engine", "")).startswith("wyoming:"):
                                misses[stream] += 1  # the local engine answered: not counted
                                continue
                            latencies[stream].append(data["latency_s"])
                            if stream:
                                early.append(data.get("sent_early_s", 0.0))
            finally:
                process.terminate()
                process.wait(15)
            off = stats(latencies[False])
            on = stats(latencies[True])
            name = "voiced" if kind == "voiced" else "wyoming-faster-whisper"
            section.rows.append(
                Row.of("remote asr", f"{name}: VAD end -> transcript, whole utterance", "ms", off)
            )
            section.rows.append(
                Row.of(
                    "remote asr",
                    f"{name}: VAD end -> transcript, streamed",
                    "ms",
                    on,
                    peer=f"{on['median'] / off['median']:.2f}x whole utterance",
                    note=f"{stats(early)['median']:.2f} s of speech out before the VAD end",
                )
            )
            section.results[kind] = {
                "stream_on_s": latencies[True],
                "stream_off_s": latencies[False],
                "local_answers": misses,
                "sent_early_s": early,
            }
    section.notes.append(
        "both on 127.0.0.1 with the front end and the remote on the same 2 cores; the remote "
        "transcribes at audio-stop in both modes (voiced and wyoming-faster-whisper buffer the "
        "stream), so streaming saves the transfer and the connection set-up, not ASR compute"
    )
    return section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one round, the voiced remote only")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args(argv)
    remotes = ["voiced"]
    if not args.quick and faster_whisper_installed():
        remotes.append("faster-whisper")
    section = measure(remotes, 1 if args.quick else args.rounds)
    section.report(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
