"""Files and pipes at the edge: raw PCM on stdin, sound files, the WAV answer sink."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import wave
from pathlib import Path

import numpy as np
import pytest
from speech import piper, silence
from voiced_plugins.io_wav import StdinSource, StdinSourceOptions, WavSink, WavSinkOptions

from voiced.audio import AudioChunk, AudioFormat

ROOT = Path(__file__).parents[1]


async def collect(source) -> bytes:
    return b"".join([chunk.audio async for chunk in source.chunks()])


async def test_stdin_source_converts_48k_stereo_pcm_to_16k_mono():
    t = np.arange(48000) / 48000
    tone = (np.sin(2 * np.pi * 440 * t) * 10000).astype("<i2")
    stereo = np.stack([tone, tone], axis=1).tobytes()
    options = StdinSourceOptions(rate=48000, channels=2)
    pcm = await collect(StdinSource(options, stream=io.BytesIO(stereo)))
    assert len(pcm) == pytest.approx(32000, rel=0.01)  # one second at 16 kHz, 16-bit mono


async def test_stdin_source_keeps_a_frame_split_across_reads_whole():
    class Trickle(io.BytesIO):
        def read(self, size=-1):
            return super().read(min(size, 333))  # odd sizes split stereo frames

    samples = (np.arange(16000) % 100).astype("<i2")
    stereo = np.stack([samples, samples], axis=1).tobytes()
    pcm = await collect(StdinSource(StdinSourceOptions(channels=2), stream=Trickle(stereo)))
    assert np.array_equal(np.frombuffer(pcm, "<i2"), samples)


async def test_wav_sink_writes_a_named_file_at_the_requested_rate(tmp_path):
    target = tmp_path / "answer.wav"
    sink = WavSink(WavSinkOptions(path=str(target), rate=16000))
    audio = np.zeros(22050, dtype="<i2").tobytes()

    async def stream():
        yield AudioChunk(audio, AudioFormat(22050, 2, 1))

    await sink.play(stream(), "run1", "kitchen")
    with wave.open(str(target)) as wav:
        assert wav.getframerate() == 16000
        assert wav.getnframes() == pytest.approx(16000, abs=50)


@pytest.mark.slow
def test_voiced_run_reads_raw_pcm_piped_on_stdin(tmp_path):
    pcm = silence(0.3) + piper("What time is it?") + silence(1.0)
    config = tmp_path / "voiced.toml"
    config.write_text('[pipeline]\nservice = []\nhandler = ["builtin"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "voiced.cli",
            "--config",
            str(config),
            "run",
            "--source",
            "stdin",
            "--events",
            "json",
        ],
        input=pcm,
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr.decode()
    events = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [e["data"]["name"] for e in events if e["type"] == "intent"] == ["HassGetCurrentTime"]


def one_answer():
    async def stream():
        yield AudioChunk(np.zeros(1600, dtype="<i2").tobytes())

    return stream()


async def test_wav_sink_keeps_only_the_newest_answers(tmp_path):
    sink = WavSink(WavSinkOptions(path=str(tmp_path), keep=3))
    sink.load()
    for n in range(5):
        await sink.play(one_answer(), f"run{n:05d}", "kitchen")  # 8 characters: the name's id
    left = {p.name.rsplit("-", 1)[1] for p in tmp_path.glob("*.wav")}
    assert left == {"run00002.wav", "run00003.wav", "run00004.wav"}


async def test_wav_sink_counts_the_answers_an_earlier_run_left(tmp_path):
    earlier = WavSink(WavSinkOptions(path=str(tmp_path), keep=2))
    for n in range(2):
        await earlier.play(one_answer(), f"old{n:05d}", "kitchen")
    os.utime(tmp_path / next(p.name for p in tmp_path.iterdir() if "old00000" in p.name), (1, 1))
    later = WavSink(WavSinkOptions(path=str(tmp_path), keep=2))
    later.load()
    await later.play(one_answer(), "new00000", "kitchen")
    names = sorted(p.name for p in tmp_path.glob("*.wav"))
    assert len(names) == 2
    assert not any("old00000" in name for name in names)  # the oldest went first


async def test_wav_sink_rewriting_one_file_counts_once(tmp_path):
    sink = WavSink(WavSinkOptions(path=str(tmp_path / "latest.wav"), keep=1))
    sink.load()
    for n in range(3):
        await sink.play(one_answer(), f"run{n}", "kitchen")
    assert [p.name for p in tmp_path.iterdir()] == ["latest.wav"]


def test_wav_sink_rejects_an_unknown_file_name_field():
    with pytest.raises(ValueError, match=r"\{room\}.*\{site_id\}, \{run_id\}, \{time\}"):
        WavSinkOptions(path="answers/{room}-{time}.wav")


@pytest.mark.slow
def test_sigterm_stops_the_daemon_while_stdin_is_an_idle_open_pipe(tmp_path):
    config = tmp_path / "voiced.toml"
    config.write_text('[pipeline]\nservice = []\nhandler = ["builtin"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    command = [sys.executable, "-m", "voiced.cli", "--config", str(config), "run"]
    log = tmp_path / "stderr.log"
    with log.open("wb") as stderr:
        proc = subprocess.Popen(
            [*command, "--source", "stdin"],
            stdin=subprocess.PIPE,  # held open, nothing written: a quiet microphone pipe
            stderr=stderr,
            stdout=subprocess.DEVNULL,
            cwd=ROOT,
            env=env,
        )
    try:
        deadline = time.monotonic() + 240
        while b"ready" not in log.read_bytes():
            assert proc.poll() is None, f"ended before it was ready: {log.read_text()}"
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)  # stdin stays open all the while
    finally:
        proc.kill()
        proc.stdin.close()
    assert proc.returncode == 0, log.read_text()
    assert "Fatal Python error" not in log.read_text()
