"""Remote TTS over Wyoming: ``wyoming-piper`` from PyPI speaks for the front end, and the local
Piper takes over, with an ``engine-fallback`` event, when it is gone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from remote_processes import piper_server
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
from voiced_plugins.remote.tts import RemoteTtsOptions, RemoteWyomingTts
from voiced_plugins.tts_piper import PiperOptions, PiperTts

from voiced.audio import PIPELINE_FORMAT, convert
from voiced.chain import EngineChain
from voiced.events import Event, EventType

pytestmark = pytest.mark.slow

SENTENCE = "The kitchen light is now on."


@pytest.fixture(scope="module")
def whisper() -> WhisperCt2Asr:
    asr = WhisperCt2Asr(WhisperCt2Options(), None)
    asr.load()
    return asr


def heard(whisper: WhisperCt2Asr, chunk) -> str:
    pcm = convert(chunk.audio, chunk.format, PIPELINE_FORMAT)
    return whisper.transcribe(pcm).text.lower()


def test_wyoming_piper_speaks_the_sentence_and_the_local_piper_takes_over_when_it_dies(
    tmp_path: Path, whisper
):
    peer = piper_server(tmp_path, steady=True)  # noise-free: what Whisper hears is the same
    peer.start()
    events: list[Event] = []
    remote = RemoteWyomingTts(
        RemoteTtsOptions(uri=peer.uri, voice="en_US-joe-medium", retry_seconds=0.5), None
    )
    local = PiperTts(PiperOptions(noise_scale=0.0, noise_w_scale=0.0), None)
    chain = EngineChain("tts", [("wyoming", remote), ("piper", local)], events.append, 1.0)
    try:
        chain.load()
        assert remote.info["program"] == "piper"
        assert remote.info["models"] == ["en_US-joe-medium"]
        engine, chunk = chain.call("synthesize", SENTENCE, run_id="r1")
        assert engine == "wyoming" and chunk.format.rate == 22050
        assert np.abs(chunk.to_array()).max() > 0.05
        assert "kitchen light" in heard(whisper, chunk)

        peer.kill()
        engine, chunk = chain.call("synthesize", SENTENCE, run_id="r2")
        assert engine == "piper" and "kitchen light" in heard(whisper, chunk)
        [fallback] = [e for e in events if e.type == EventType.ENGINE_FALLBACK]
        assert fallback.run_id == "r2" and fallback.data["engine"] == "wyoming"
        assert peer.uri in fallback.data["reason"]
    finally:
        chain.close()
        peer.kill()
