"""A voiced site as a Home Assistant voice satellite over the ESPHome native API, against a
real Home Assistant core (``ha_fixtures.HA_VERSION``) and a real ``voiced run``.

Home Assistant adds the site through its own ESPHome config flow (host and port) and talks to
it with its own client (aioesphomeapi); voiced's Wyoming service is its STT and TTS. The site's
microphone is voiced's stdin, fed at the pace of speech; its speaker is a WAV sink, heard back
with Whisper. Nothing of Home Assistant is mocked.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from asr_fixtures import whisper  # noqa: F401 (a fixture)
from ha_fixtures import HomeAssistant, HomeAssistantUnavailable, ha_venv
from http_files import serving, tone_wav
from mqtt_fixtures import free_port, wait_port
from speech import silence, steady_piper
from wyoming.audio import AudioChunk, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event as WyEvent

from voiced.audio import PIPELINE_FORMAT, AudioFormat, convert, read_pipeline_audio

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

CHUNK_SECONDS = 0.02
ANNOUNCE = "The back door is open."
QUESTION = "What time is it?"
KEY = base64.b64encode(bytes(range(1, 33))).decode()


class Microphone:
    """voiced's stdin as a live microphone: silence at the pace of speech, speech on demand."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.speech: queue.Queue[tuple[bytes, Spoken]] = queue.Queue()
        self.running = True
        self.thread = threading.Thread(target=self._feed, daemon=True)
        self.thread.start()

    def say(self, pcm: bytes) -> Spoken:
        """Queue speech; the returned ``Spoken`` is set once its last sample was written."""
        spoken = Spoken()
        self.speech.put((pcm, spoken))
        return spoken

    def close(self) -> None:
        self.running = False
        self.thread.join(5)

    def _feed(self) -> None:
        step = int(PIPELINE_FORMAT.bytes_per_second * CHUNK_SECONDS)
        pending, spoken = b"", None
        started = time.monotonic()
        sent = 0.0
        while self.running:
            if not pending and not self.speech.empty():
                pending, spoken = self.speech.get()
            piece, pending = (pending[:step], pending[step:]) if pending else (bytes(step), b"")
            piece += bytes(step - len(piece))
            try:
                self.stream.write(piece)
                self.stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                return
            if spoken is not None and not pending:
                spoken.at = time.time()
                spoken.set()
                spoken = None
            sent += CHUNK_SECONDS
            time.sleep(max(0.0, started + sent - time.monotonic()))


class Spoken(threading.Event):
    """Set when queued speech has been written in full; ``at`` is that wall time."""

    at = 0.0


class Voiced:
    """``voiced run`` with a site on stdin, answers to WAV files, Wyoming and ESPHome."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.wyoming_port = free_port()
        self.esphome_port = free_port()
        self.porch_port = free_port()
        self.hall_port = free_port()
        self.answers = folder / "answers"
        self.config = folder / "voiced.toml"
        self.config.write_text(
            CONFIG.format(
                wyoming=self.wyoming_port,
                esphome=self.esphome_port,
                porch=self.porch_port,
                hall=self.hall_port,
                key=KEY,
                answers=self.answers,
            )
        )

    def start(self) -> None:
        self.log = open(self.folder / "voiced.log", "wb")  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            [sys.executable, "-m", "voiced.cli", "--config", str(self.config), "run"],
            stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT, cwd=self.folder,
            env={**os.environ, "STATE_DIRECTORY": str(self.folder)},
        )  # fmt: skip
        self.microphone = Microphone(self.process.stdin)
        wait_port(self.esphome_port, 180)
        wait_port(self.wyoming_port, 60)

    def stop(self) -> None:
        self.microphone.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.log.close()

    def log_text(self) -> str:
        return (self.folder / "voiced.log").read_text(errors="replace")

    def events(self, kind: str) -> list[dict[str, Any]]:
        """voiced's events of a type, as its log service printed them (JSON lines)."""
        found = []
        for line in self.log_text().splitlines():
            if line.startswith("{") and f'"type": "{kind}"' in line:
                found.append(json.loads(line))
        return found

    def answer_files(self) -> list[Path]:
        return sorted(self.answers.glob("*.wav"), key=lambda p: p.stat().st_mtime)


CONFIG = """
site_id = "default"
[pipeline]
source = ["stdin"]
wake = ["openwakeword"]
asr = ["whisper-ctranslate2"]
intent = ["hassil"]
handler = ["builtin"]
tts = ["piper"]
sink = ["wav"]
service = ["log", "wyoming", "esphome"]

[stages.service.log]
format = "json"

[conversation]
follow_up = "off"

[stages.wake.openwakeword]
models = ["hey_jarvis", "alexa"]

[stages.sink.wav]
path = "{answers}"

[stages.service.wyoming]
uri = "tcp://127.0.0.1:{wyoming}"

[[stages.service.esphome.devices]]
site_id = "default"
port = {esphome}
friendly_name = "Kitchen"
pipeline = "home-assistant"

[[stages.service.esphome.devices]]
site_id = "porch"
port = {porch}
friendly_name = "Porch"

[[stages.service.esphome.devices]]
site_id = "hall"
port = {hall}
encryption_key = "{key}"
"""


@pytest.fixture(scope="module")
def voiced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Voiced]:
    daemon = Voiced(tmp_path_factory.mktemp("voiced"))
    daemon.start()
    try:
        yield daemon
    except BaseException:
        print(daemon.log_text()[-6000:])
        raise
    finally:
        daemon.stop()


@pytest.fixture(scope="module")
def ha(tmp_path_factory: pytest.TempPathFactory, voiced: Voiced) -> Iterator[HomeAssistant]:
    """Home Assistant with voiced as the STT, conversation agent and TTS (Wyoming) of its
    preferred pipeline (2025.4's built-in agent cannot start conversations), and the voiced
    site added through the ESPHome config flow."""
    try:
        venv = ha_venv()
    except HomeAssistantUnavailable as exc:
        pytest.fail(str(exc))
    home = HomeAssistant(venv, tmp_path_factory.mktemp("homeassistant"))
    home.start()
    try:
        set_up(home, voiced)
        yield home
    except BaseException:
        print(home.log_tail(80))
        raise
    finally:
        home.stop()


def set_up(home: HomeAssistant, voiced: Voiced) -> None:
    """voiced's Wyoming service as STT, agent and TTS of a preferred pipeline "voiced", a
    pipeline "home" with Home Assistant's own agent, and the kitchen site added through the
    ESPHome config flow (``home.pipeline_id``, ``home.builtin_pipeline_id``,
    ``home.esphome_entry``)."""
    home.config_flow("wyoming", {"host": "127.0.0.1", "port": voiced.wyoming_port})
    wyoming = home.wait(lambda: _with_stt_and_tts(_wyoming_entities(home)), 60, "STT/TTS")
    stt_language = english(home, "stt", wyoming["stt"])
    tts_language = english(home, "tts", wyoming["tts"])
    pipeline = home.ws(
        "assist_pipeline/pipeline/create",
        name="voiced", language="en", conversation_engine=wyoming["conversation"],
        conversation_language="en", stt_engine=wyoming["stt"], stt_language=stt_language,
        tts_engine=wyoming["tts"], tts_language=tts_language, tts_voice=None,
        wake_word_entity=None, wake_word_id=None,
    )  # fmt: skip
    home.ws("assist_pipeline/pipeline/set_preferred", pipeline_id=pipeline["id"])
    home.pipeline_id = pipeline["id"]  # type: ignore[attr-defined]
    builtin = home.ws(  # Home Assistant's own agent: its timers need the satellite's device
        "assist_pipeline/pipeline/create",
        name="home", language="en", conversation_engine="conversation.home_assistant",
        conversation_language="en", stt_engine=wyoming["stt"], stt_language=stt_language,
        tts_engine=wyoming["tts"], tts_language=tts_language, tts_voice=None,
        wake_word_entity=None, wake_word_id=None,
    )  # fmt: skip
    home.builtin_pipeline_id = builtin["id"]  # type: ignore[attr-defined]
    entry = home.config_flow("esphome", {"host": "127.0.0.1", "port": voiced.esphome_port})
    home.esphome_entry = entry["result"]["entry_id"]  # type: ignore[attr-defined]
    home.wait(lambda: "assist_satellite" in esphome_entities(home), 60, "the satellite")


def _wyoming_entities(ha: HomeAssistant) -> dict[str, str]:
    entries = ha.ws("config/entity_registry/list")
    return {e["entity_id"].split(".")[0]: e["entity_id"] for e in entries
            if e["platform"] == "wyoming"}  # fmt: skip


def english(ha: HomeAssistant, domain: str, engine_id: str) -> str:
    """The engine's English language code (voiced's Wyoming engines say en_US, en, ...)."""
    providers = ha.ws(f"{domain}/engine/list")["providers"]
    languages = next(p for p in providers if p["engine_id"] == engine_id)["supported_languages"]
    return next(code for code in ["en", "en_US", "en-US", *languages] if code in languages)


def state_of(ha: HomeAssistant, entity_id: str) -> str | None:
    """An entity's state, or None while Home Assistant has none for it."""
    found = ha.state(entity_id)
    return found["state"] if found else None


def _with_stt_and_tts(found: dict[str, str]) -> dict[str, str] | None:
    return found if {"stt", "tts", "conversation"} <= set(found) else None


def esphome_entities(ha: HomeAssistant, entry_id: str | None = None) -> dict[str, str]:
    """An ESPHome device's entities by the end of their unique id: ``assist_satellite``,
    ``pipeline``, ``vad_sensitivity``, ``wake_word`` (Home Assistant's own, ``MAC-key``),
    ``media_player`` and ``mute`` (the device's: ``MAC/device/type/Name`` in Home Assistant
    2026.11, ``MAC-type-object_id`` in 2025.4). The kitchen's unless ``entry_id`` names
    another entry."""
    entry_id = entry_id or ha.esphome_entry  # type: ignore[attr-defined]
    entries = ha.ws("config/entity_registry/list")
    return {_entity_key(e["unique_id"]): e["entity_id"] for e in entries
            if e["platform"] == "esphome" and e["config_entry_id"] == entry_id}  # fmt: skip


def _entity_key(unique_id: str) -> str:
    """``aa:bb:..-wake_word`` -> ``wake_word``; ``aa:bb:../0/media_player/Media Player`` ->
    ``media_player``."""
    return re.split(r"[-/]", unique_id)[-1].lower().replace(" ", "_")


def heard(whisper: Any, path: Path) -> str:  # noqa: F811 (the fixture)
    return transcribe(whisper, read_pipeline_audio(path))


def transcribe(whisper: Any, pcm: bytes) -> str:  # noqa: F811 (the fixture)
    audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768
    segments, _ = whisper.transcribe(audio, language="en", beam_size=1)
    return " ".join(s.text for s in segments).strip().lower()


def new_answer(voiced: Voiced, before: list[Path], timeout: float = 60) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fresh = [p for p in voiced.answer_files() if p not in before]
        if fresh and time.time() - fresh[-1].stat().st_mtime > 0.5:  # written in full
            return fresh[-1]
        time.sleep(0.1)
    raise TimeoutError(f"no new answer in {voiced.answers} within {timeout} s")


def pipeline_runs(ha: HomeAssistant, pipeline_id: str | None = None) -> list[dict[str, Any]]:
    """Home Assistant's debug record of a pipeline's runs (the preferred one's unless
    ``pipeline_id``), events included."""
    pipeline_id = pipeline_id or ha.pipeline_id  # type: ignore[attr-defined]
    runs = ha.ws("assist_pipeline/pipeline_debug/list", pipeline_id=pipeline_id)["pipeline_runs"]
    return [ha.ws("assist_pipeline/pipeline_debug/get", pipeline_id=pipeline_id,
                  pipeline_run_id=run["pipeline_run_id"]) for run in runs]  # fmt: skip


def stt_texts(ha: HomeAssistant, pipeline_id: str | None = None) -> list[str]:
    texts = []
    for run in pipeline_runs(ha, pipeline_id):
        for event in run.get("events", []):
            if event["type"] == "stt-end":
                texts.append(event["data"]["stt_output"]["text"].lower())
    return texts


def test_the_site_is_added_by_host_and_port_with_a_satellite_and_its_entities(
    ha: HomeAssistant,
) -> None:
    found = esphome_entities(ha)
    assert {"assist_satellite", "media_player", "mute", "pipeline", "wake_word",
            "vad_sensitivity", "wake_word_sensitivity"} <= set(found), found  # fmt: skip
    satellite = ha.wait(lambda: ha.state(found["assist_satellite"]), 30, "satellite state")
    assert satellite["state"] == "idle"
    announce, start_conversation = 1, 2  # AssistSatelliteEntityFeature
    assert satellite["attributes"]["supported_features"] == announce | start_conversation
    assert ha.state(found["mute"])["state"] == "off"
    wake_word = ha.state(found["wake_word"])
    no_wake_word = "no_wake_word"  # Home Assistant 2026.11's own option, beside the site's
    assert set(wake_word["attributes"]["options"]) - {no_wake_word} == {"Hey Jarvis", "Alexa"}


def test_an_announcement_is_spoken_on_the_sites_speaker(
    ha: HomeAssistant,
    voiced: Voiced,
    whisper: Any,  # noqa: F811 (the fixture)
) -> None:
    satellite = esphome_entities(ha)["assist_satellite"]
    before = voiced.answer_files()
    ha.post("/api/services/assist_satellite/announce",
            {"entity_id": satellite, "message": ANNOUNCE, "preannounce": False})  # fmt: skip
    text = heard(whisper, new_answer(voiced, before))
    assert "back door" in text and "open" in text, text
    assert ha.state(satellite)["state"] == "idle"


def test_start_conversation_speaks_then_home_assistant_hears_the_answer(
    ha: HomeAssistant,
    voiced: Voiced,
    whisper: Any,  # noqa: F811 (the fixture)
) -> None:
    satellite = esphome_entities(ha)["assist_satellite"]
    before = voiced.answer_files()
    ha.post("/api/services/assist_satellite/start_conversation",
            {"entity_id": satellite, "start_message": "Do you want to know the time?",
             "preannounce": False})  # fmt: skip
    question = new_answer(voiced, before)
    assert "time" in heard(whisper, question)
    voiced.microphone.say(silence(0.3) + steady_piper(QUESTION) + silence(2.0))
    ha.wait(lambda: any("time" in t for t in stt_texts(ha)), 60, "HA heard the answer")
    reply = new_answer(voiced, [*before, question], 60)  # Home Assistant's answer, played here
    assert heard(whisper, reply), "Home Assistant's answer is silent"
    ha.wait(lambda: state_of(ha, satellite) == "idle", 30, "the satellite idle again")


def test_ask_question_returns_the_matched_answer_to_an_automation(
    ha: HomeAssistant,
    voiced: Voiced,
    whisper: Any,  # noqa: F811 (the fixture)
) -> None:
    """The actions run as an automation runs them (a script with a response variable)."""
    satellite = esphome_entities(ha)["assist_satellite"]
    before = voiced.answer_files()
    ask = {"action": "assist_satellite.ask_question", "response_variable": "answer", "data": {
        "entity_id": satellite, "question": "The back door is open. Shall I lock it?",
        "preannounce": False, "answers": [
            {"id": "lock", "sentences": ["yes [please]", "[yes] lock it"]},
            {"id": "leave", "sentences": ["no", "leave it [open]"]}]}}  # fmt: skip
    script = [ask, {"stop": "answered", "response_variable": "answer"}]
    result: queue.Queue[Any] = queue.Queue()
    asking = threading.Thread(
        target=lambda: result.put(_outcome(lambda: ha.ws("execute_script", sequence=script)))
    )
    asking.start()
    question = new_answer(voiced, before)
    assert "lock" in heard(whisper, question)
    voiced.microphone.say(silence(0.3) + steady_piper("Yes, please.") + silence(2.0))
    asking.join(90)
    answer = result.get(timeout=1)
    assert not isinstance(answer, BaseException), answer
    assert answer["response"]["id"] == "lock", answer
    ha.wait(lambda: state_of(ha, satellite) == "idle", 30, "the satellite idle again")


def _outcome(call: Any) -> Any:
    """What ``call()`` returned, or what it raised."""
    try:
        return call()
    except Exception as exc:
        return exc


def test_the_wake_word_hands_the_turn_to_home_assistants_pipeline(
    ha: HomeAssistant,
    voiced: Voiced,
    whisper: Any,  # noqa: F811 (the fixture)
) -> None:
    runs_before = len(pipeline_runs(ha))
    before = voiced.answer_files()
    voiced.microphone.say(steady_piper("Hey Jarvis") + silence(0.8) + steady_piper(QUESTION)
                          + silence(2.0))  # fmt: skip
    ha.wait(lambda: len(pipeline_runs(ha)) > runs_before, 30, "a pipeline run from the wake word")
    ha.wait(lambda: any("time" in t for t in stt_texts(ha)[runs_before:]), 60, "HA heard it")
    reply = new_answer(voiced, before, 60)
    assert heard(whisper, reply)


def test_the_mute_switch_mutes_the_sites_microphone(ha: HomeAssistant, voiced: Voiced) -> None:
    mute = esphome_entities(ha)["mute"]
    ha.post("/api/services/switch/turn_on", {"entity_id": mute})
    ha.wait(lambda: state_of(ha, mute) == "on", 15, "the switch on")
    ha.wait(lambda: any(e["data"]["muted"] for e in voiced.events("muted")), 15, "site muted")
    runs_before = len(pipeline_runs(ha))
    voiced.microphone.say(steady_piper("Hey Jarvis") + silence(3.0))
    time.sleep(5)
    assert len(pipeline_runs(ha)) == runs_before  # a muted site hears no wake word
    ha.post("/api/services/switch/turn_off", {"entity_id": mute})
    ha.wait(lambda: state_of(ha, mute) == "off", 15, "the switch off")


def test_the_wake_word_select_picks_the_word_the_site_acts_on(
    ha: HomeAssistant, voiced: Voiced
) -> None:
    select = esphome_entities(ha)["wake_word"]
    ha.post("/api/services/select/select_option", {"entity_id": select, "option": "Alexa"})
    ha.wait(lambda: state_of(ha, select) == "Alexa", 15, "Alexa chosen")
    runs_before = len(pipeline_runs(ha))
    voiced.microphone.say(steady_piper("Hey Jarvis") + silence(3.0))
    time.sleep(5)
    assert len(pipeline_runs(ha)) == runs_before  # the other word is no longer acted on
    voiced.microphone.say(steady_piper("Alexa") + silence(0.8) + steady_piper(QUESTION)
                          + silence(2.0))  # fmt: skip
    ha.wait(lambda: len(pipeline_runs(ha)) > runs_before, 30, "a run from the chosen word")
    ha.post("/api/services/select/select_option", {"entity_id": select, "option": "Hey Jarvis"})


def test_the_sensitivity_select_sets_how_readily_the_sites_wake_word_fires(
    ha: HomeAssistant, voiced: Voiced
) -> None:
    select = esphome_entities(ha)["wake_word_sensitivity"]
    shown = ha.wait(lambda: ha.state(select), 15, "the select's state")
    assert shown["state"] == "Moderately sensitive"
    assert shown["attributes"]["options"] == [
        "Slightly sensitive", "Moderately sensitive", "Very sensitive"]  # fmt: skip
    ha.post("/api/services/select/select_option", {"entity_id": select, "option": "Very sensitive"})
    ha.wait(lambda: state_of(ha, select) == "Very sensitive", 15, "very sensitive chosen")

    def applied() -> dict[str, Any] | None:
        said = [e["data"] for e in voiced.events("esphome")
                if e["data"]["event"] == "wake-sensitivity"]  # fmt: skip
        return said[-1] if said else None

    ha.wait(lambda: applied(), 15, "voiced applied it")
    assert applied() == {"event": "wake-sensitivity", "level": "very",
                         "thresholds": {"OpenWakeWord": 0.25}}  # fmt: skip
    ha.post("/api/services/select/select_option",
            {"entity_id": select, "option": "Moderately sensitive"})  # fmt: skip
    ha.wait(lambda: applied()["level"] == "moderately", 15, "back to moderately")


@pytest.fixture(scope="module")
def music_url() -> Iterator[str]:
    """A 5 s tone served over HTTP on 127.0.0.1, as a media server serves a song."""
    with serving({"/song.wav": tone_wav(5.0, rate=16000)}) as url:
        yield f"{url}/song.wav"


def test_media_from_home_assistant_plays_in_the_background_of_the_site(
    ha: HomeAssistant, voiced: Voiced, music_url: str
) -> None:
    """Home Assistant offers pause and play for the media player, and its play_media reaches
    the site as media playing in the background (pause itself: tests/test_esphome.py, with
    Home Assistant's client library and a speaker that plays at a loudspeaker's pace)."""
    player = esphome_entities(ha)["media_player"]
    pause, play = 1, 16384  # MediaPlayerEntityFeature
    features = ha.state(player)["attributes"]["supported_features"]
    assert features & pause and features & play
    before = voiced.answer_files()
    ha.post("/api/services/media_player/play_media",
            {"entity_id": player, "media_content_id": music_url,
             "media_content_type": "music"})  # fmt: skip
    song = new_answer(voiced, before, 30)
    media = ha.wait(lambda: [e for e in voiced.events("run-start")
                             if e["data"]["reason"] == "media"], 15, "the media's run")  # fmt: skip
    run_id = media[-1]["run_id"]
    ended = ha.wait(lambda: [e["data"]["reason"] for e in voiced.events("run-end")
                             if e["run_id"] == run_id], 30, "the media played")  # fmt: skip
    assert ended == ["done"]
    assert len(read_pipeline_audio(song)) == 5 * PIPELINE_FORMAT.bytes_per_second
    ha.wait(lambda: state_of(ha, player) == "idle", 15, "the player idle again")


class WyomingSatellite:
    """A Wyoming satellite named ``porch`` connected to voiced: what voiced plays at its site
    arrives here as audio events (kept as 16 kHz PCM, one entry per audio-stop)."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.played: list[bytes] = []
        self.connected = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.task = self.loop.create_task(self._run())
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            self.loop.run_until_complete(self.task)

    async def _run(self) -> None:
        client = AsyncTcpClient("127.0.0.1", self.port)
        await client.connect()
        await client.write_event(WyEvent("run-satellite", {"name": "porch"}))
        self.connected.set()
        audio, fmt = bytearray(), None
        while (event := await client.read_event()) is not None:
            if AudioChunk.is_type(event.type):
                chunk = AudioChunk.from_event(event)
                fmt = AudioFormat(chunk.rate, chunk.width, chunk.channels)
                audio += chunk.audio
            elif AudioStop.is_type(event.type) and fmt is not None:
                self.played.append(convert(bytes(audio), fmt))
                audio = bytearray()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(5)


def test_a_wyoming_satellite_of_voiced_is_a_satellite_of_its_own(
    ha: HomeAssistant,
    voiced: Voiced,
    whisper: Any,  # noqa: F811 (the fixture)
) -> None:
    porch = WyomingSatellite(voiced.wyoming_port)
    try:
        assert porch.connected.wait(10)
        ha.wait(lambda: "[porch] satellite connected" in voiced.log_text(), 30, "porch's site")
        entry = ha.config_flow("esphome", {"host": "127.0.0.1", "port": voiced.porch_port})
        entry_id = entry["result"]["entry_id"]
        found = ha.wait(lambda: esphome_entities(ha, entry_id).get("assist_satellite"), 60,
                        "the porch's satellite")  # fmt: skip
        assert found != esphome_entities(ha)["assist_satellite"]
        kitchen_before = voiced.answer_files()
        ha.post("/api/services/assist_satellite/announce",
                {"entity_id": found, "message": "Someone is at the door.",
                 "preannounce": False})  # fmt: skip
        ha.wait(lambda: porch.played, 30, "the announcement at the porch")
        text = transcribe(whisper, porch.played[0])
        assert "door" in text, text
        in_kitchen = [heard(whisper, p) for p in voiced.answer_files() if p not in kitchen_before]
        assert not [t for t in in_kitchen if "door" in t], in_kitchen  # not in the kitchen
    finally:
        porch.close()


def timer_events(voiced: Voiced, what: str) -> list[dict[str, Any]]:
    """The esphome events ``what`` ("timer", "timer-stopped") voiced printed."""
    return [e["data"] for e in voiced.events("esphome") if e["data"]["event"] == what]


def timer_said(voiced: Voiced, what: str) -> list[dict[str, Any]]:
    """Home Assistant's timer events of a kind ("started", "finished") at the device."""
    return [e for e in timer_events(voiced, "timer") if e["timer_event"] == what]


def rings(voiced: Voiced) -> list[dict[str, Any]]:
    return [e for e in voiced.events("run-start") if e["data"]["reason"] == "timer"]


def select(ha: HomeAssistant, entity_id: str, option: str) -> None:
    """Pick an option of a select entity and wait until Home Assistant shows it."""
    ha.post("/api/services/select/select_option", {"entity_id": entity_id, "option": option})
    ha.wait(lambda: state_of(ha, entity_id) == option, 15, f"{entity_id} at {option}")


def test_a_spoken_timer_runs_in_home_assistant_and_rings_until_the_stop_word(
    ha: HomeAssistant, voiced: Voiced
) -> None:
    """The satellite's pipeline select picks Home Assistant's own agent (whose timers need
    the satellite's device); the timer is started by voice, rings here, and the wake word
    stops it."""
    pipeline = esphome_entities(ha)["pipeline"]
    builtin = ha.builtin_pipeline_id  # type: ignore[attr-defined]
    select(ha, pipeline, "home")
    try:
        command = steady_piper("Set a timer for five seconds.")
        voiced.microphone.say(steady_piper("Hey Jarvis") + silence(0.8) + command + silence(2))
        ha.wait(lambda: any("timer" in t for t in stt_texts(ha, builtin)), 60, "HA heard it")
        started = ha.wait(lambda: timer_said(voiced, "started"), 30, "the timer started")
        assert started[0]["total_seconds"] == 5
        ha.wait(lambda: timer_said(voiced, "finished"), 30, "the timer finished")
        ha.wait(lambda: rings(voiced), 10, "the timer ringing here")
        voiced.microphone.say(steady_piper("Hey Jarvis") + silence(1.0))
        stopped = ha.wait(lambda: timer_events(voiced, "timer-stopped"), 20, "ringing stopped")
        assert stopped[0]["reason"] == "wake word"
    finally:
        select(ha, pipeline, "preferred")


def test_an_encrypted_device_is_added_with_its_key(ha: HomeAssistant, voiced: Voiced) -> None:
    """Home Assistant learns the device needs a key, asks for it (a second form), and adds
    the device over noise."""
    first = ha.post("/api/config/config_entries/flow", {"handler": "esphome"})
    asked = ha.post(f"/api/config/config_entries/flow/{first['flow_id']}",
                    {"host": "127.0.0.1", "port": voiced.hall_port})  # fmt: skip
    assert asked["type"] == "form" and asked["step_id"] == "encryption_key", asked
    entry = ha.post(f"/api/config/config_entries/flow/{asked['flow_id']}", {"noise_psk": KEY})
    assert entry["type"] == "create_entry", entry
    entry_id = entry["result"]["entry_id"]
    satellite = ha.wait(lambda: esphome_entities(ha, entry_id).get("assist_satellite"), 60,
                        "the hall's satellite")  # fmt: skip
    ha.wait(lambda: state_of(ha, satellite) == "idle", 30, "the hall's satellite idle")


def test_the_daemon_stops_on_sigterm_with_home_assistant_connected(
    ha: HomeAssistant, voiced: Voiced
) -> None:
    """Last in this module: it stops the daemon."""
    assert any(e["data"]["event"] == "connected" for e in voiced.events("esphome"))
    voiced.process.send_signal(signal.SIGTERM)
    assert voiced.process.wait(20) == 0
