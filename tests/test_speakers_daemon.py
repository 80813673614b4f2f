"""Who is speaking, against the real daemon: a ``voiced run`` child with real Whisper, Piper,
webrtcvad, the ge2e speaker stage and mosquitto. An enrolled voice unlocks the front door
(an MQTT command); a voice nobody enrolled is refused with a spoken answer; the events say
who. A corrupted voices file is an error at start, and the daemon runs on, refusing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from daemon_process import DaemonProcess
from speech import espeak, silence, steady_piper

from voiced.audio import write_wav
from voiced.permissions import SpeakersConfig
from voiced.speakers import VoiceBook

pytestmark = pytest.mark.slow

ENROLL = (
    "Turn on the lights in the kitchen and set the heating to twenty one degrees.",
    "What is the weather going to be like tomorrow morning?",
    "Remind me to call my sister when I get home this evening.",
)
COMMAND = "Unlock the front door."
LOCK_TOPIC = "home/front_door/set"

CONFIG = """
log_level = "INFO"
[pipeline]
source = ["file"]
asr = ["whisper-ctranslate2"]
speaker = ["ge2e"]
intent = ["hassil"]
handler = ["mqtt-actions", "builtin"]
tts = ["piper"]
sink = ["wav"]
service = ["log", "mqtt"]
[stages.source.file]
path = "{wav}"
[stages.sink.wav]
path = "{answers}"
[stages.service.log]
format = "json"
[stages.service.mqtt]
url = "{mqtt}"
discovery = false
[[stages.handler.mqtt-actions.entities]]
id = "lock.front_door"
command_topic = "{lock}"
payload_on = "LOCK"
payload_off = "UNLOCK"
[speakers]
file = "{voices}"
[[speakers.permissions]]
entity = "lock.front_door"
allow = ["alice"]
"""


@pytest.fixture(scope="module")
def voices(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Alice (the bundled Piper voice) enrolled as ``voiced speakers enroll`` would."""
    from voiced_plugins.speaker_ge2e.encoder import Ge2eEncoder, Ge2eOptions

    from voiced.enrollment import Clip, voice_of

    encoder = Ge2eEncoder(Ge2eOptions())
    encoder.load()
    rule = SpeakersConfig().rule()
    clips = [Clip(f"sentence {i}", steady_piper(text)) for i, text in enumerate(ENROLL, 1)]
    path = tmp_path_factory.mktemp("state") / "speakers.json"
    VoiceBook.open(path, "ge2e").enroll("alice", [
        v.vector for v in voice_of(clips, encoder, rule.alone + rule.threshold)
    ])  # fmt: skip
    return path


def start(tmp_path: Path, voices: Path, mqtt_url: str, audio: bytes) -> DaemonProcess:
    wav = tmp_path / "speech.wav"
    write_wav(wav, audio)
    config = tmp_path / "voiced.toml"
    config.write_text(
        CONFIG.format(wav=wav, answers=tmp_path / "answers", mqtt=mqtt_url, lock=LOCK_TOPIC,
                      voices=voices)
    )  # fmt: skip
    return DaemonProcess(config, tmp_path / "voiced.log")


def events_of(daemon: DaemonProcess, kind: str) -> list[dict]:
    return [e for e in daemon.events if e["type"] == kind]


def test_an_enrolled_voice_unlocks_and_a_stranger_is_refused_aloud(
    tmp_path, voices, mosquitto, mqtt_recorder
):
    lock = mqtt_recorder(LOCK_TOPIC)
    alice = steady_piper(COMMAND)
    stranger = espeak(COMMAND, "en-us+m3")
    daemon = start(tmp_path, voices, mosquitto.url, alice + silence(1.5) + stranger + silence(1.5))
    try:
        daemon.wait_event(lambda e: e["type"] == "intent-refused", timeout=240)
        daemon.wait_event(
            lambda e: e["type"] == "run-end" and len(events_of(daemon, "run-end")) >= 2, 120
        )
    finally:
        assert daemon.stop() == 0, daemon.tail()
    transcripts = events_of(daemon, "transcript")
    assert [t["data"]["speaker"] for t in transcripts] == ["alice", "unknown"], transcripts
    intents = events_of(daemon, "intent")
    assert [i["data"]["speaker"] for i in intents] == ["alice", "unknown"]
    assert all(i["data"]["name"] == "HassTurnOff" for i in intents)
    assert lock.payloads(LOCK_TOPIC) == [b"UNLOCK"]  # once: Alice's command only
    (refused,) = events_of(daemon, "intent-refused")
    assert refused["data"]["speaker"] == "unknown"
    assert refused["data"]["rule"] == "entity=lock.front_door"
    answer = SpeakersConfig().refused_unknown
    assert refused["data"]["speech"] == answer
    spoken = [e["data"]["text"] for e in events_of(daemon, "tts-start")]
    assert answer in spoken, spoken
    assert refused["run_id"] == intents[1]["run_id"]
    assert len(list((tmp_path / "answers").glob("*.wav"))) == 2


def test_a_corrupted_voices_file_is_an_error_at_start_and_the_daemon_runs_on_refusing(
    tmp_path, mosquitto, mqtt_recorder
):
    voices = tmp_path / "speakers.json"
    voices.write_text('{"format": "voiced-speakers/1", "model": "ge2e", "voices": {"alice": 7}}')
    lock = mqtt_recorder(LOCK_TOPIC)
    daemon = start(tmp_path, voices, mosquitto.url, steady_piper(COMMAND) + silence(1.5))
    try:
        error = daemon.wait_event(
            lambda e: e["type"] == "error" and e["data"]["stage"] == "speaker", 180
        )
        daemon.ready()
        daemon.wait_event(lambda e: e["type"] == "run-end", 180)
    finally:
        assert daemon.stop() == 0, daemon.tail()
    assert "running without speaker checks" in error["data"]["message"]
    assert str(voices) in error["data"]["message"]
    assert any("running without speaker checks" in line for line in daemon.log_lines())
    (refused,) = events_of(daemon, "intent-refused")
    assert refused["data"]["speaker"] == "unknown"
    assert lock.payloads(LOCK_TOPIC) == []
    assert json.loads(voices.read_text())["voices"] == {"alice": 7}  # left as it was


async def test_enrolling_at_a_site_asks_for_each_sentence_and_learns_the_voice(tmp_path):
    """What the MQTT ``enroll`` command and Home Assistant's text entity start: the daemon
    says each sentence, records the next utterance at the site, and stores the voice."""
    import asyncio

    from pipeline_helpers import overrides, started_pipeline

    gap = silence(5.0)
    audio = silence(2.5) + gap.join(steady_piper(s) for s in ENROLL) + gap
    wav = tmp_path / "room.wav"
    write_wav(wav, audio)
    voices = tmp_path / "speakers.json"
    config = overrides(
        pipeline={"speaker": ["ge2e"]},
        stages={"source": {"file": {"path": str(wav), "realtime": True}}},
        speakers={"file": str(voices)},
    )
    async with started_pipeline(config) as pipeline:
        feeding = asyncio.create_task(pipeline.run())
        while "default" not in pipeline.sites:
            await asyncio.sleep(0.05)
        assert await pipeline.enroll_speaker("Carol", "default") is True
        feeding.cancel()
    events = pipeline.recorder
    prompts = [e.data["text"] for e in events.of("tts-start")]
    assert prompts == [f"Please say: {s}" for s in ENROLL] + [
        "Thank you, Carol. I know your voice now."
    ]
    assert [e.data["reason"] for e in events.of("run-end") if e.data["reason"] == "captured"] == [
        "captured"
    ] * 3
    assert events.of("transcript") == []  # the sentences were recorded, not answered
    (enrolled,) = events.of("speaker-enrolled")
    assert enrolled.data == {"name": "carol", "clips": 3}
    assert VoiceBook.open(voices, "ge2e").names() == ["carol"]
