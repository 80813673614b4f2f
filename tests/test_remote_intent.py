"""A remote intent stage over Wyoming, against a second voiced serving ``intent`` and
``handle`` on 127.0.0.1: what the remote acted on is answered with its words (``handled``),
what it leaves to us is acted on here (``intent``), what it does not know goes to the next
recognizer; a remote that is down or dies mid-request hands the sentence to hassil with an
``engine-fallback`` event naming the reason."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from mqtt_fixtures import free_port
from pipeline_helpers import EventRecorder, no_config_file, overrides, run_pipeline
from remote_processes import ServiceProcess, remote_intent_voiced
from speech import silence, steady_piper
from voiced_plugins.remote.intent import HANDLED_REMOTELY

from voiced.audio import write_wav
from voiced.context import RunContext
from voiced.daemon import prepare
from voiced.intents import Transcript
from voiced.pipeline import Pipeline

pytestmark = pytest.mark.slow

HOME = str(Path(__file__).resolve().parents[1] / "config" / "home.yaml")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("remote-intent")


@pytest.fixture(scope="module")
def peer(folder: Path):
    process = remote_intent_voiced(folder)
    process.start()
    yield process
    process.stop()


def front_end(uri: str, **sections) -> dict:
    """Intents: the remote first, then local hassil on the same example home."""
    return overrides(
        pipeline={"intent": [f"wyoming:{uri}", "hassil"], "handler": ["builtin", "responses"]},
        stages={"intent": {"wyoming": {"retry_seconds": 0.5}, "hassil": {"home": HOME}}},
        **sections,
    )


class Recognizers:
    """The front end's intent and handler stages, loaded on a real (not started) daemon."""

    def __init__(self, uri: str, **options) -> None:
        self.recorder = EventRecorder()
        config = front_end(uri)
        config["stages"]["intent"]["wyoming"].update(options)
        settings, host = prepare(no_config_file(), config, [("recorder", self.recorder)])
        self.host = host
        self.app = Pipeline(settings, host)
        self.app.build(only={"intent", "handler"})
        for (kind, name), component in reversed(self.app.components.items()):
            component.load()
            host.pm.register(component, name=f"{kind}:{name}")
        self.name = settings.pipeline.intent[0]

    def answer(self, text: str, run_id: str = "r1") -> tuple[object, object, RunContext]:
        context = RunContext(run_id=run_id, app=self.app)
        transcript = Transcript(text=text, engine="test")
        intent = self.host.pm.hook.voiced_recognize(transcript=transcript, context=context)
        response = (
            self.host.pm.hook.voiced_handle(intent=intent, context=context) if intent else None
        )
        return intent, response, context

    def close(self) -> None:
        for component in self.app.components.values():
            component.close()


@pytest.fixture
def recognizers(peer):
    made = Recognizers(peer.uri)
    yield made
    made.close()


async def test_a_spoken_command_the_remote_acts_on_is_answered_with_its_words(peer, folder):
    path = folder / "time.wav"
    write_wav(path, silence(0.4) + steady_piper("what time is it") + silence(1.2))
    config = front_end(peer.uri)
    config["stages"]["source"] = {"file": {"path": str(path)}}
    _, events = await run_pipeline(config)
    [intent] = events.of("intent")
    assert intent.data["name"] == HANDLED_REMOTELY
    assert intent.data["recognizer"] == f"wyoming:{peer.uri}"
    [handled] = events.of("handled")
    assert handled.data["handler"] == f"wyoming:{peer.uri}"
    assert any(ch.isdigit() for ch in handled.data["speech"])  # the remote told the time
    assert not events.of("engine-fallback")


def test_an_intent_the_remote_leaves_to_us_is_acted_on_here(recognizers, peer):
    intent, response, _ = recognizers.answer("turn on the kitchen light")
    assert intent.name == "HassTurnOn" and intent.recognizer == recognizers.name
    assert intent.slots["name"] == "Kitchen Light"
    assert intent.data["remote"] == peer.uri
    assert response.handler == "responses"  # a local handler answered, not the remote


def test_what_the_remote_does_not_know_goes_to_the_next_recognizer(recognizers, peer):
    intent, _, context = recognizers.answer("sing me a song about ducks")
    assert intent is None
    [remote, *_] = context.data["intent_errors"]
    assert remote["recognizer"] == recognizers.name
    assert "did not recognize" in remote["reason"] and peer.uri in remote["reason"]
    assert not recognizers.recorder.of("engine-fallback")  # a refusal is no failure


def test_a_remote_that_is_down_leaves_the_sentence_to_hassil_with_the_reason():
    nobody = f"tcp://127.0.0.1:{free_port()}"
    made = Recognizers(nobody)
    try:
        intent, _, _ = made.answer("turn on the kitchen light", run_id="down")
        assert intent.name == "HassTurnOn" and intent.recognizer == "hassil"
        [fallback] = made.recorder.of("engine-fallback")
        assert fallback.run_id == "down"
        assert fallback.data["kind"] == "intent" and fallback.data["engine"] == made.name
        assert fallback.data["next"] == "hassil"
        assert "cannot connect" in fallback.data["reason"]
    finally:
        made.close()


def test_killed_mid_request_hassil_answers_and_the_remote_serves_again_once_back(folder):
    process = remote_intent_voiced(folder)
    process.start()
    made = Recognizers(process.uri)
    try:
        intent, _, _ = made.answer("turn off the kitchen light", run_id="r1")
        assert intent.recognizer == made.name

        process.signal(signal.SIGSTOP)  # takes the sentence, cannot answer, then dies
        killer = threading.Timer(1.0, process.kill)
        killer.start()
        intent, _, _ = made.answer("turn off the kitchen light", run_id="r2")
        killer.join()
        assert intent.name == "HassTurnOff" and intent.recognizer == "hassil"
        [fallback] = made.recorder.of("engine-fallback")
        assert fallback.run_id == "r2" and "closed the connection" in fallback.data["reason"]

        restarted = ServiceProcess(process.command, process.port, folder, "remote-intent-2")
        restarted.start()
        try:
            intent, _, _ = made.answer("turn off the kitchen light", run_id="r3")
            if intent.recognizer == "hassil":  # still inside retry_seconds (0.5 s)
                threading.Event().wait(0.6)
                intent, _, _ = made.answer("turn off the kitchen light", run_id="r4")
            assert intent.recognizer == made.name
        finally:
            restarted.stop()
    finally:
        made.close()
        process.kill()


def test_voiced_intent_names_the_remote_in_the_config_file(peer, folder):
    config = folder / "front-intent.toml"
    config.write_text(
        f'[pipeline]\nintent = ["wyoming:{peer.uri}", "hassil"]\n'
        f'[stages.intent.hassil]\nhome = "{HOME}"\n'
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "voiced.cli",
            "--config",
            str(config),
            "intent",
            "--json",
            "what time is it",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["intent"]["recognizer"] == f"wyoming:{peer.uri}"
    assert result["response"]["handler"] == f"wyoming:{peer.uri}"


def test_doctor_shows_the_remote_intent_service(peer):
    from voiced_plugins.remote.doctor import remote_checks

    from voiced.config import Settings

    settings = Settings(pipeline={"intent": [f"wyoming:{peer.uri}", "hassil"]})
    [check] = remote_checks(settings)
    assert check.ok is True and check.name == f"remote intent wyoming:{peer.uri}"
    assert "voiced-conversation" in check.detail and " ms" in check.detail
