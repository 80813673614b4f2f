"""Remote wake word over Wyoming: the front end streams its audio to another voiced's
``detect`` and hears the wake word from there; with the remote gone nothing breaks."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from remote_processes import remote_voiced
from speech import silence, steady_piper
from voiced_plugins.remote.wake import RemoteWakeOptions, RemoteWyomingWake

from voiced.audio import AudioChunk

pytestmark = pytest.mark.slow

CHUNK = 640  # 20 ms of 16 kHz 16-bit mono, as sources deliver


def feed(wake: RemoteWyomingWake, audio: bytes, tail_s: float = 1.5) -> list[str]:
    """Feed at the pace of speech, as a microphone would; the names detected."""
    heard = []
    audio += silence(tail_s)
    for i in range(0, len(audio), CHUNK):
        detection = wake.process(AudioChunk(audio[i : i + CHUNK]))
        if detection is not None:
            heard.append(detection.name)
        time.sleep(0.02)
    return heard


def test_a_remote_voiced_hears_the_wake_word_for_the_front_end(tmp_path: Path):
    peer = remote_voiced(tmp_path, wake=True)
    peer.start()
    wake = RemoteWyomingWake(RemoteWakeOptions(uri=peer.uri, retry_seconds=0.5), None)
    try:
        wake.load()
        assert wake.connected.wait(10)
        assert feed(wake, silence(0.3) + steady_piper("hey jarvis")) == ["hey_jarvis"]
        assert feed(wake, steady_piper("turn on the kitchen lights")) == []
        # a second wake word on the same connection: the stream was restarted after the first
        assert feed(wake, steady_piper("hey jarvis")) == ["hey_jarvis"]

        peer.kill()
        assert feed(wake, steady_piper("hey jarvis"), tail_s=0.5) == []  # no error either
        assert not wake.connected.is_set()
    finally:
        wake.close()
        peer.kill()


async def test_a_front_end_wakes_and_transcribes_through_a_second_voiced(tmp_path: Path):
    from pipeline_helpers import overrides, run_pipeline

    from voiced.audio import write_wav

    peer = remote_voiced(tmp_path, wake=True)
    peer.start()
    try:
        path = tmp_path / "wake-and-command.wav"
        speech = (
            steady_piper("hey jarvis") + silence(0.8) + steady_piper("turn on the kitchen lights")
        )
        write_wav(path, silence(1.0) + speech + silence(1.5))
        remote = {"uri": peer.uri, "retry_seconds": 0.5}
        _, events = await run_pipeline(
            overrides(
                pipeline={"wake": ["wyoming"], "asr": ["wyoming", "whisper-ctranslate2"]},
                stages={
                    "source": {"file": {"path": str(path), "realtime": True}},
                    "wake": {"wyoming": remote},
                    "asr": {"wyoming": remote},
                },
            )
        )
    finally:
        peer.kill()
    [wake] = events.of("wake")
    assert wake.data["name"] == "hey_jarvis"
    [transcript] = events.of("transcript")
    assert transcript.run_id == wake.run_id and transcript.data["engine"] == "wyoming"
    assert "kitchen light" in transcript.data["text"].lower()
