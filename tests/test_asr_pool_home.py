"""The home travels with the work: a pool worker (a real ``voiced worker`` process, real
Whisper tiny.en, a real mosquitto) recognizes with the front end's home grammar, published
retained with its digest, and so hears a command the bare engine mishears; a grammar message
that is too big, malformed or not what its digest says is refused with a clear log, and the
worker keeps serving.

The slip is what tiny.en really writes for espeak-ng's Caribbean English voice at 140 wpm:
"Torque on the kitchen lights." (measured; the local engine with the home hears the command).
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from home_stages import App, home_hassil
from mqtt_fixtures import Mosquitto
from pool_processes import WorkerProcess, pool_settings, write_pool_config
from speech import espeak, steady_piper
from voiced_plugins.asr_pool.frontend import MqttPoolAsr
from voiced_plugins.asr_pool.options import PoolOptions
from voiced_plugins.asr_pool.wire import GrammarMessage, Job, grammar_digest
from voiced_plugins.intent_hassil import HassilIntent

pytestmark = pytest.mark.slow

PREFIX = "voiced/asr-pool"
SLIP = ("turn on the kitchen lights", "en-029", 140)  # bare tiny.en: "Torque on the ..."


@pytest.fixture(scope="module")
def hassil() -> HassilIntent:
    return home_hassil()


@pytest.fixture
def worker(mosquitto: Mosquitto, tmp_path: Path) -> Iterator[WorkerProcess]:
    process = WorkerProcess(write_pool_config(tmp_path, mosquitto), "w1", tmp_path)
    yield process
    process.stop()


def front_end(mosquitto: Mosquitto, app, **extra) -> MqttPoolAsr:
    options = PoolOptions.model_validate({**pool_settings(mosquitto), **extra})
    stage = MqttPoolAsr(options, app)
    stage.load()
    return stage


def wait_for_log(worker: WorkerProcess, text: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while text not in worker.log.read_text(errors="replace"):
        assert worker.process.poll() is None, worker.tail()
        assert time.monotonic() < deadline, f"{text!r} not logged: {worker.tail()}"
        time.sleep(0.1)


def wait_online(stage: MqttPoolAsr, worker: WorkerProcess) -> None:
    deadline = time.monotonic() + 120
    while worker.worker_id not in stage.online_workers():
        assert worker.process.poll() is None, worker.tail()
        assert time.monotonic() < deadline, worker.tail()
        time.sleep(0.1)


def test_the_pool_hears_a_command_the_bare_engine_mishears_because_the_home_travelled(
    mosquitto, worker, hassil
):
    audio = espeak(*SLIP)
    bare = front_end(mosquitto, App(hassil), send_home=False, client_id="bare")
    home = front_end(mosquitto, App(hassil), client_id="home")
    try:
        wait_online(bare, worker)
        # without the home, the worker is the bare engine: the slip is real
        heard = bare.transcribe(audio)
        assert hassil.recognize(heard.text) is None, heard.text
        assert heard.data["home"] == {"grammar": None, "status": "none"}
        assert heard.data["without_home"]["skipped"] == [
            "choice",
            "rescore",
            "retry",
            "second_look",
        ]

        # the front end published its home (retained, with its digest); the worker built it
        digest = home.info["home"]
        assert digest is not None and home.home.messages == 1
        wait_for_log(worker, f"home grammar {digest[:12]} (en) ready")
        transcript = home.transcribe(audio)
        intent = hassil.recognize(transcript.text)
        assert intent is not None and intent.name == "HassTurnOn", transcript.text
        assert transcript.data["home"] == {"grammar": digest, "status": "used"}
        assert "without_home" not in transcript.data
        assert transcript.data["decision"]["step"] != "first"  # a home step decided it
        assert transcript.data["worker"] == "w1"
    finally:
        bare.close()
        home.close()


def publish_grammar(mosquitto: Mosquitto, mqtt_recorder, front: str, payload: bytes) -> None:
    hostile = mqtt_recorder(f"{PREFIX}/none")
    hostile.client.publish(
        f"{PREFIX}/grammar/{front}/en", payload, qos=1, retain=True
    ).wait_for_publish(10)


def results(recorder) -> list[dict]:
    found = [json.loads(p) for t, p, _ in list(recorder.messages) if "/reply/" in t]
    return [r for r in found if r["type"] == "result"]


def header(digest: str, body: bytes, **extra) -> bytes:
    fields = {"digest": digest, "language": "en", "format": 1, "bytes": len(body), **extra}
    return json.dumps(fields).encode() + b"\n" + body


def test_a_bad_grammar_message_is_refused_with_a_clear_log_and_the_worker_keeps_serving(
    mosquitto, worker, hassil, mqtt_recorder
):
    oversize = b"\0" * (5 * 1024 * 1024)
    honest = GrammarMessage.of({"format": 1, "language": "en"}, "en")
    bomb = zlib.compress(b"[" * (64 * 1024 * 1024), 9)  # 64 MB of JSON from 64 kB
    hostile = {
        "big": header(grammar_digest(oversize), oversize),
        "garbled": b"not a header\n" + honest.body,
        "forged": header("0" * 32, honest.body),
        "bomb": header(grammar_digest(bomb), bomb),
        "hollow": honest.encode(),  # right digest, no grammar in it
    }
    for front, payload in hostile.items():
        publish_grammar(mosquitto, mqtt_recorder, front, payload)
    stage = front_end(mosquitto, App(hassil), client_id="home")
    try:
        wait_online(stage, worker)
        wait_for_log(worker, f"home grammar {stage.info['home'][:12]} (en) ready")
        log = worker.log.read_text(errors="replace")
        assert f"{PREFIX}/grammar/big/en: a grammar of {len(hostile['big'])} bytes is over" in log
        assert f"{PREFIX}/grammar/garbled/en: the grammar header is not JSON" in log
        assert f"{PREFIX}/grammar/forged/en: the body's digest is not {'0' * 32}" in log
        assert f"home grammar {grammar_digest(bomb)[:12]}: BadMessage: the grammar is over" in log
        assert f"home grammar {honest.digest[:12]}: GrammarDataError: 'language'" not in log
        assert f"home grammar {honest.digest[:12]}: GrammarDataError" in log

        # the worker serves on: with the home, and a job naming a grammar it refused says so
        transcript = stage.transcribe(steady_piper("turn off the bedroom lamp"))
        assert "bedroom" in transcript.text.lower()
        assert transcript.data["home"]["status"] == "used"
        replies = mqtt_recorder(f"{PREFIX}/reply/hostile/+")
        job = Job("j1", "hostile", time.time() + 60, steady_piper("what time is it"))
        named = {**json.loads(job.encode().partition(b"\n")[0]), "grammar": honest.digest}
        payload = json.dumps(named).encode() + b"\n" + job.audio
        replies.client.publish(f"{PREFIX}/jobs/w1", payload, qos=1)
        [reply] = replies.wait_for(lambda _: results(replies), timeout=60)
        assert "time" in reply["text"].lower()
        assert reply["data"]["home"]["status"].startswith("refused: GrammarDataError")
        assert worker.process.poll() is None
    finally:
        stage.close()
