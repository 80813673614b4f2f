"""Files and pipes at the edge: raw PCM on stdin, sound files, the WAV answer sink."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
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
