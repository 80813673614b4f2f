"""Remote ASR over Wyoming as an ordinary chain member, against real services on 127.0.0.1:
a second voiced, and ``wyoming-faster-whisper`` from PyPI. When the remote dies the local
engine answers the same utterance and an ``engine-fallback`` event says why; when it is back
it serves again."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import pytest
from home_stages import HOME, home_hassil
from pipeline_helpers import overrides, run_pipeline
from remote_processes import ServiceProcess, faster_whisper_server, remote_voiced
from speech import espeak, silence, steady_piper
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
from voiced_plugins.remote.asr import RemoteAsrOptions, RemoteWyomingAsr
from voiced_plugins.remote.peer import RemoteUnavailable

from voiced.api.recognition import HOME_STEPS
from voiced.audio import write_wav
from voiced.chain import EngineChain
from voiced.events import Event, EventType

pytestmark = pytest.mark.slow

COMMAND = "turn on the kitchen lights"
SLIP = (COMMAND, "en-029", 140)  # bare tiny.en hears "Torque on the kitchen lights."


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("remote")


@pytest.fixture(scope="module")
def command_audio() -> bytes:
    return steady_piper(COMMAND)


@pytest.fixture(scope="module")
def voiced_peer(folder: Path):
    peer = remote_voiced(folder)
    peer.start()
    yield peer
    peer.stop()


@pytest.fixture(scope="module")
def whisper_peer(folder: Path):
    peer = faster_whisper_server(folder)
    peer.start()
    yield peer
    peer.stop()


def command_file(folder: Path, audio: bytes) -> str:
    path = folder / "command.wav"
    write_wav(path, silence(0.4) + audio + silence(1.2))
    return str(path)


def front_end(folder: Path, audio: bytes, uri: str) -> dict:
    """A front end whose ASR chain is the remote, then local tiny.en."""
    return overrides(
        pipeline={"asr": ["wyoming", "whisper-ctranslate2"], "tts": ["piper"]},
        stages={
            "source": {"file": {"path": command_file(folder, audio)}},
            "asr": {"wyoming": {"uri": uri, "timeout": 20.0, "retry_seconds": 0.5}},
        },
    )


async def test_a_second_voiced_transcribes_for_the_front_end(voiced_peer, folder, command_audio):
    _, events = await run_pipeline(front_end(folder, command_audio, voiced_peer.uri))
    [transcript] = events.of("transcript")
    assert transcript.data["engine"] == "wyoming"
    assert transcript.data["remote"] == voiced_peer.uri
    assert "kitchen light" in transcript.data["text"].lower()
    assert not events.of("engine-fallback")
    [loaded] = [e for e in events.of("stage-loaded") if e.data["name"] == "wyoming"]
    assert loaded.data["program"] == "voiced-asr"
    # this remote voiced has no intent stage: it says so, and the front end says what it skipped
    assert transcript.data["home"] == {"status": "none", "by": "the remote voiced's own"}
    assert transcript.data["without_home"]["skipped"] == list(HOME_STEPS)
    assert "has no intent stage" in transcript.data["without_home"]["why"]


async def test_the_config_file_names_the_remote_with_its_address(
    voiced_peer, folder, command_audio
):
    config = folder / "front-end.toml"
    config.write_text(f'[pipeline]\nasr = ["wyoming:{voiced_peer.uri}", "whisper-ctranslate2"]\n')
    chosen = front_end(folder, command_audio, voiced_peer.uri)
    del chosen["pipeline"]["asr"], chosen["stages"]["asr"]  # the file says it all
    _, events = await run_pipeline(chosen, config=config)
    [transcript] = events.of("transcript")
    assert transcript.data["engine"] == f"wyoming:{voiced_peer.uri}"
    assert transcript.data["remote"] == voiced_peer.uri
    assert "kitchen light" in transcript.data["text"].lower()


async def test_wyoming_faster_whisper_from_pypi_transcribes_for_the_front_end(
    whisper_peer, folder, command_audio
):
    _, events = await run_pipeline(front_end(folder, command_audio, whisper_peer.uri))
    [transcript] = events.of("transcript")
    assert transcript.data["engine"] == "wyoming"
    assert transcript.data["remote"] == whisper_peer.uri
    assert "kitchen light" in transcript.data["text"].lower()
    [loaded] = [e for e in events.of("stage-loaded") if e.data["name"] == "wyoming"]
    assert loaded.data["program"] == "faster-whisper"
    # a third-party service cannot score sentences: the event says which steps were skipped
    assert transcript.data["home"] == {"status": "none", "by": "faster-whisper"}
    assert transcript.data["without_home"]["skipped"] == list(HOME_STEPS)
    assert (
        "faster-whisper is no voiced: it cannot score sentences"
        in (transcript.data["without_home"]["why"])
    )


def test_a_remote_voiced_hears_with_its_own_home_a_command_the_bare_engine_mishears(
    voiced_peer, whisper_peer, folder
):
    audio = espeak(*SLIP)
    hassil = home_hassil()
    home_peer = remote_voiced(folder, home=HOME)
    home_peer.start()
    stages = {
        name: RemoteWyomingAsr(RemoteAsrOptions(uri=peer.uri, timeout=60.0), None)
        for name, peer in (("home", home_peer), ("bare", voiced_peer), ("peer", whisper_peer))
    }
    try:
        for stage in stages.values():
            stage.load()
        heard = {name: stage.transcribe(audio) for name, stage in stages.items()}
    finally:
        for stage in stages.values():
            stage.close()
        home_peer.stop()
    for bare in ("bare", "peer"):  # the slip is real: a voiced without a home, faster-whisper
        assert hassil.recognize(heard[bare].text) is None, heard[bare].text
        assert "without_home" in heard[bare].data
    transcript = heard["home"]
    intent = hassil.recognize(transcript.text)
    assert intent is not None and intent.name == "HassTurnOn", transcript.text
    assert transcript.data["home"] == {"status": "used", "by": "the remote voiced's own"}
    assert transcript.data["decision"]["home"] is True and "without_home" not in transcript.data


async def test_a_remote_that_is_down_leaves_the_run_to_the_local_engine_with_the_reason(
    folder, command_audio
):
    from mqtt_fixtures import free_port

    nobody = f"tcp://127.0.0.1:{free_port()}"
    _, events = await run_pipeline(front_end(folder, command_audio, nobody))
    [transcript] = events.of("transcript")
    assert transcript.data["engine"] == "whisper-ctranslate2"
    assert "kitchen light" in transcript.data["text"].lower()
    [fallback] = events.of("engine-fallback")
    assert fallback.run_id == transcript.run_id
    assert fallback.data["engine"] == "wyoming" and fallback.data["next"] == "whisper-ctranslate2"
    assert "cannot connect" in fallback.data["reason"] and nobody in fallback.data["reason"]


def test_killed_mid_utterance_the_local_engine_answers_it_and_the_remote_serves_again_later(
    folder, command_audio
):
    peer = remote_voiced(folder)
    peer.start()
    events: list[Event] = []
    remote = RemoteWyomingAsr(RemoteAsrOptions(uri=peer.uri, retry_seconds=0.5), None)
    local = WhisperCt2Asr(WhisperCt2Options(), None)
    chain = EngineChain("asr", [("wyoming", remote), ("local", local)], events.append, 1.0)
    try:
        chain.load()
        engine, transcript = chain.call("transcribe", command_audio, None, run_id="r1")
        assert engine == "wyoming" and "kitchen light" in transcript.text.lower()

        # Frozen, the remote accepts the utterance but cannot answer; then it dies with it.
        peer.signal(signal.SIGSTOP)
        killer = threading.Timer(1.0, peer.kill)
        killer.start()
        engine, transcript = chain.call("transcribe", command_audio, None, run_id="r2")
        killer.join()
        assert engine == "local" and "kitchen light" in transcript.text.lower()
        [fallback] = [e for e in events if e.type == EventType.ENGINE_FALLBACK]
        assert fallback.run_id == "r2" and fallback.data["engine"] == "wyoming"
        assert "closed the connection" in fallback.data["reason"]

        # Down: the stage fails at once (no connect timeout per call) and says when it retries.
        with pytest.raises(RemoteUnavailable, match="next try in"):
            remote.transcribe(command_audio)

        restarted = ServiceProcess(peer.command, peer.port, folder, "remote-voiced-2")
        restarted.start()
        try:
            time.sleep(1.0)  # the chain lets a failed engine rest retry_after (1 s here)
            engine, transcript = chain.call("transcribe", command_audio, None, run_id="r3")
            assert engine == "wyoming" and transcript.data["remote"] == peer.uri
        finally:
            restarted.stop()
    finally:
        chain.close()
        peer.kill()


def test_a_remote_slower_than_its_timeout_hands_the_utterance_on(folder, command_audio):
    peer = remote_voiced(folder)
    peer.start()
    try:
        remote = RemoteWyomingAsr(RemoteAsrOptions(uri=peer.uri, timeout=1.0), None)
        remote.load()
        peer.signal(signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(RemoteUnavailable, match=r"did not answer within 1 s"):
            remote.transcribe(command_audio)
        assert time.monotonic() - started < 5
        peer.signal(signal.SIGCONT)
        assert "kitchen light" in transcribe_once_back(remote, command_audio).text.lower()
        remote.close()
    finally:
        peer.kill()


def transcribe_once_back(remote: RemoteWyomingAsr, audio, tries: int = 5):
    """The same client transcribes again once its peer runs; the peer first works off the
    utterance it was given while stopped, which on a loaded machine can outlast one timeout."""
    for _ in range(tries - 1):
        try:
            return remote.transcribe(audio)
        except RemoteUnavailable:
            continue
    return remote.transcribe(audio)


def test_options_reject_a_uri_without_a_port():
    with pytest.raises(ValueError, match="tcp://HOST:PORT"):
        RemoteAsrOptions(uri="gpu-box")


def test_doctor_shows_each_remote_with_its_program_model_and_latency(voiced_peer):
    from mqtt_fixtures import free_port
    from voiced_plugins.remote.doctor import remote_checks

    from voiced.config import Settings

    nobody = f"tcp://127.0.0.1:{free_port()}"
    settings = Settings(
        pipeline={"asr": ["wyoming#gpu", "wyoming#nas", "whisper-ctranslate2"]},
        stages={"asr": {"wyoming#gpu": {"uri": voiced_peer.uri}, "wyoming#nas": {"uri": nobody}}},
    )
    up, down = remote_checks(settings)
    assert up.ok is True and up.name == "remote asr wyoming#gpu"
    assert "voiced-asr (whisper-ctranslate2)" in up.detail and " ms" in up.detail
    assert down.ok is None and "cannot connect" in down.detail and "next engine" in down.detail


def test_a_remote_asr_is_asked_in_whispers_spelling_of_the_language():
    from voiced_plugins.remote.asr import _spoken

    assert _spoken("zh-CN") == "zh" and _spoken("de-CH") == "de" and _spoken(None) is None
