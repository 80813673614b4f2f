"""Streaming to a remote Wyoming ASR: the speech goes out while it is spoken (``audio-start``
at speech start, ``audio-chunk``s as VAD passes them, ``audio-stop`` at the VAD end), against a
second voiced and ``wyoming-faster-whisper`` on 127.0.0.1; a stream that breaks mid-utterance
leaves the whole utterance to the local engine, with an ``engine-fallback`` event."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from pipeline_helpers import overrides, run_pipeline
from remote_processes import faster_whisper_server, remote_voiced
from speech import silence, steady_piper

from voiced.audio import write_wav
from voiced.hookspecs import hookimpl

pytestmark = pytest.mark.slow

COMMAND = "turn on the kitchen lights and then the lamp in the bedroom"


class KillMidSpeech:
    """SIGKILLs the remote one second after the front end's VAD heard speech start."""

    def __init__(self, remote) -> None:
        self.timer = threading.Timer(1.0, remote.kill)

    @hookimpl
    def voiced_event(self, event) -> None:
        if event.type == "vad-start" and self.timer.ident is None:
            self.timer.start()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("remote-stream")


@pytest.fixture(scope="module")
def spoken(folder: Path) -> tuple[str, float]:
    """A command file and how long its speech lasts."""
    audio = steady_piper(COMMAND)
    path = folder / "command.wav"
    write_wav(path, silence(0.4) + audio + silence(1.2))
    return str(path), len(audio) / 32000


def front_end(path: str, uri: str, stream: bool = True) -> dict:
    """A front end hearing a file at the pace of speech, as from a microphone; ASR: the
    remote, then local tiny.en."""
    return overrides(
        pipeline={"asr": [f"wyoming:{uri}", "whisper-ctranslate2"], "tts": ["piper"]},
        stages={
            "source": {"file": {"path": path, "realtime": True}},
            "asr": {"wyoming": {"timeout": 20.0, "retry_seconds": 0.5, "stream": stream}},
        },
    )


@pytest.mark.parametrize("server", [remote_voiced, faster_whisper_server], ids=["voiced", "pypi"])
async def test_speech_goes_out_while_it_is_spoken(server, folder, spoken):
    path, speech_seconds = spoken
    remote = server(folder)
    remote.start()
    try:
        _, events = await run_pipeline(front_end(path, remote.uri))
    finally:
        remote.stop()
    [transcript] = events.of("transcript")
    assert transcript.data["engine"] == f"wyoming:{remote.uri}"
    assert transcript.data["streamed"] is True
    assert "kitchen light" in transcript.data["text"].lower()
    # most of the speech was at the remote before the person stopped speaking
    assert transcript.data["sent_early_s"] > speech_seconds / 2
    assert not events.of("engine-fallback")


async def test_with_streaming_off_the_utterance_goes_whole_at_the_end(folder, spoken):
    path, _ = spoken
    remote = remote_voiced(folder)
    remote.start()
    try:
        _, events = await run_pipeline(front_end(path, remote.uri, stream=False))
    finally:
        remote.stop()
    [transcript] = events.of("transcript")
    assert transcript.data["engine"] == f"wyoming:{remote.uri}"
    assert "streamed" not in transcript.data
    assert "kitchen light" in transcript.data["text"].lower()


async def test_a_stream_broken_mid_utterance_leaves_the_whole_utterance_to_the_local_engine(
    folder, spoken
):
    path, _ = spoken
    remote = remote_voiced(folder)
    remote.start()
    killer = KillMidSpeech(remote)
    try:
        _, events = await run_pipeline(front_end(path, remote.uri), [("killer", killer)])
    finally:
        killer.timer.cancel()
        remote.kill()
    assert killer.timer.finished.is_set()
    [transcript] = events.of("transcript")
    assert transcript.data["engine"] == "whisper-ctranslate2"
    assert "kitchen light" in transcript.data["text"].lower()
    assert "bedroom" in transcript.data["text"].lower()  # all of it, not what was streamed
    # (a speculative reading during a pause may fail too: that is no run's fact, run_id None)
    [fallback] = [e for e in events.of("engine-fallback") if e.run_id == transcript.run_id]
    assert fallback.data["engine"] == f"wyoming:{remote.uri}"
    assert fallback.data["next"] == "whisper-ctranslate2"
    assert "closed the stream" in fallback.data["reason"]
