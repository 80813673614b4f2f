"""The ASR worker pool: 3 real ``voiced worker`` processes behind a real mosquitto with MQTT 5
shared subscriptions. Every utterance gets exactly one answer, the right one, when a worker is
SIGKILLed mid-utterance and when the broker restarts; with no worker the local engine serves."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mqtt_fixtures import Mosquitto, free_port
from pipeline_helpers import overrides, run_pipeline
from pool_processes import WorkerProcess, pool_settings, write_pool_config
from speech import silence, steady_piper
from voiced_plugins.asr_pool.doctor import parallel_check, workers_check
from voiced_plugins.asr_pool.frontend import MqttPoolAsr, PoolUnavailable
from voiced_plugins.asr_pool.options import PoolConfigError, PoolOptions
from voiced_plugins.asr_pool.wire import Job, worker_status
from voiced_plugins.mqtt.options import MqttOptions

from voiced.audio import write_wav
from voiced.chain import EngineChain
from voiced.stages import StageCall

pytestmark = pytest.mark.slow

# (sentence, a word the transcript must contain): six different ones, so a mixed-up answer fails
UTTERANCES = [
    ("turn on the kitchen lights", "kitchen"),
    ("turn off the bedroom lamp", "bedroom"),
    ("what time is it", "time"),
    ("set a timer for five minutes", "timer"),
    ("open the garage door", "garage"),
    ("play some music in the living room", "music"),
]


@pytest.fixture(scope="module")
def speech() -> list[bytes]:
    return [steady_piper(text) for text, _ in UTTERANCES]


@pytest.fixture
def pool(mosquitto: Mosquitto, tmp_path: Path) -> Iterator[dict[str, WorkerProcess]]:
    config = write_pool_config(tmp_path, mosquitto)
    workers = {w: WorkerProcess(config, w, tmp_path) for w in ("w1", "w2", "w3")}
    yield workers
    for worker in workers.values():
        worker.stop()


def front_end(mosquitto: Mosquitto, **extra) -> MqttPoolAsr:
    options = PoolOptions.model_validate({**pool_settings(mosquitto), **extra})
    stage = MqttPoolAsr(options, None)
    stage.load()
    return stage


def wait_online(stage: MqttPoolAsr, count: int, pool: dict[str, WorkerProcess]) -> None:
    wait_workers(stage, pool, lambda online: len(online) >= count)


def wait_workers(
    stage: MqttPoolAsr,
    pool: dict[str, WorkerProcess],
    until: Callable[[list[str]], bool],
    timeout: float = 120,
) -> None:
    """Wait until the workers the front end sees online satisfy ``until`` (each process alive)."""
    deadline = time.monotonic() + timeout
    while not until(stage.online_workers()):
        for worker in pool.values():
            assert worker.process.poll() is None, worker.tail()
        assert time.monotonic() < deadline, f"workers online: {stage.online_workers()}"
        time.sleep(0.1)


def claims(recorder) -> list[dict]:
    out = []
    for topic, payload, _ in list(recorder.messages):
        if "/reply/" in topic:
            reply = json.loads(payload)
            if reply["type"] == "claim":
                out.append(reply)
    return out


def transcribe_all(stage: MqttPoolAsr, speech: list[bytes]) -> list:
    with ThreadPoolExecutor(3) as sites:  # three rooms talking at once
        return list(sites.map(stage.transcribe, speech))


def assert_each_answered_once_and_right(stage: MqttPoolAsr, transcripts: list) -> None:
    assert len(transcripts) == len(UTTERANCES)
    for (sentence, word), transcript in zip(UTTERANCES, transcripts, strict=True):
        assert word in transcript.text.lower(), (sentence, transcript.text)
    assert len({t.data["job"] for t in transcripts}) == len(UTTERANCES)
    assert stage.stats.answered == len(UTTERANCES)


def test_a_worker_killed_mid_utterance_loses_and_duplicates_nothing(
    mosquitto, pool, speech, mqtt_recorder
):
    replies = mqtt_recorder("voiced/asr-pool/reply/#")
    stage = front_end(mosquitto)
    try:
        wait_online(stage, 3, pool)
        # a malformed job is dropped by the worker that gets it; the pool keeps serving
        stage.connection.publish("voiced/asr-pool/jobs/w1", b"not a job", qos=1)
        with ThreadPoolExecutor(1) as background:
            running = background.submit(transcribe_all, stage, speech)
            first = replies.wait_for(lambda _: claims(replies), timeout=60)[0]
            victim = pool[first["worker"]]
            victim.kill()
            transcripts = running.result(timeout=120)
        assert_each_answered_once_and_right(stage, transcripts)
        killed_job = next(t for t in transcripts if t.data["job"] == first["id"])
        assert killed_job.data["worker"] != victim.worker_id
        assert killed_job.data["sends"] >= 2  # published again when the victim's will arrived
        assert victim.worker_id not in stage.online_workers()
        answered_by = {t.data["worker"] for t in transcripts}
        assert len(answered_by) >= 2  # the broker shared the work

        check = workers_check(stage.options, stage.broker, wait=0.5)
        assert check.ok is True and "2 online" in check.detail
        assert victim.worker_id not in check.detail and "whisper-ctranslate2" in check.detail
        (advice,) = parallel_check(2, asr_workers=1)
        assert advice.ok is None and "set asr_workers = 2" in advice.fix
        assert parallel_check(2, asr_workers=2) == []
    finally:
        stage.close()


def test_a_broker_restart_mid_run_loses_and_duplicates_nothing(
    mosquitto, pool, speech, mqtt_recorder
):
    replies = mqtt_recorder("voiced/asr-pool/reply/#")
    stage = front_end(mosquitto)
    try:
        wait_online(stage, 3, pool)
        with ThreadPoolExecutor(1) as background:
            running = background.submit(transcribe_all, stage, speech)
            replies.wait_for(lambda _: claims(replies), timeout=60)
            mosquitto.restart(down_seconds=1.0)
            transcripts = running.result(timeout=120)
        assert_each_answered_once_and_right(stage, transcripts)
        for worker in pool.values():
            assert worker.process.poll() is None, worker.tail()
    finally:
        stage.close()


def test_an_utterance_waits_a_moment_for_the_workers_a_broker_restart_took_offline(
    mosquitto, pool, speech, mqtt_recorder
):
    """Every worker's will has just said offline, as a broker restart makes it say: a new
    utterance waits for a worker back online and the pool answers it, instead of turning it
    away to the next engine while the workers reconnect."""
    stage = front_end(mosquitto)
    wills = mqtt_recorder("voiced/asr-pool/none")  # a plain client that speaks for the workers

    def say(online: bool) -> None:
        for worker in pool:
            status = worker_status(worker, online)
            wills.client.publish(stage.topics.worker(worker), status, qos=1, retain=True)

    try:
        wait_online(stage, 3, pool)
        say(False)
        wait_workers(stage, pool, lambda online: not online)
        with ThreadPoolExecutor(1) as background:
            asked = background.submit(stage.transcribe, speech[0])
            time.sleep(0.5)
            assert not asked.done(), asked.exception()
            say(True)
            transcript = asked.result(timeout=60)
        assert "kitchen" in transcript.text.lower()
        assert stage.stats.answered == 1
    finally:
        stage.close()


async def test_with_no_worker_online_the_local_engine_serves_and_says_why(mosquitto, tmp_path):
    path = tmp_path / "command.wav"
    write_wav(path, silence(0.4) + steady_piper("turn on the kitchen lights") + silence(1.2))
    _, events = await run_pipeline(
        overrides(
            pipeline={"asr": ["mqtt-pool", "whisper-ctranslate2"]},
            stages={
                "source": {"file": {"path": str(path)}},
                "asr": {"mqtt-pool": pool_settings(mosquitto)},
            },
        )
    )
    [transcript] = events.of("transcript")
    assert transcript.data["engine"] == "whisper-ctranslate2"
    assert "kitchen light" in transcript.data["text"].lower()
    [fallback] = events.of("engine-fallback")
    assert fallback.data["engine"] == "mqtt-pool"
    assert "no worker of group 'voiced-asr' online" in fallback.data["reason"]


def test_the_pool_refuses_an_anonymous_broker_connection_unless_overridden(mosquitto):
    anonymous = {"broker": {"host": "127.0.0.1", "port": mosquitto.port}}
    with pytest.raises(PoolConfigError, match="needs a login"):
        PoolOptions.model_validate(anonymous).broker_options(None)
    allowed = PoolOptions.model_validate({**anonymous, "allow_anonymous": True})
    assert allowed.broker_options(None).protocol == "5"


def test_a_pool_without_a_broker_says_how_to_configure_one():
    with pytest.raises(PoolConfigError, match=r"needs a broker"):
        PoolOptions().broker_options(None)


def test_a_front_end_loaded_twice_keeps_one_session_on_the_broker(mosquitto, caplog):
    stage = front_end(mosquitto)
    try:
        client = stage.connection._client
        stage.load()  # as an engine chain does with a stage already loaded
        assert stage.connection._client is client
        time.sleep(2.0)  # two clients with one id would throw each other off within this
        assert stage.connection.connected
        assert "MQTT lost" not in caplog.text
    finally:
        stage.close()


def test_the_front_end_fails_fast_when_the_broker_is_away():
    broker = MqttOptions(host="127.0.0.1", port=free_port(), username="u", password="p")
    options = PoolOptions(broker=broker, connect_seconds=0.5, timeout=1.0)
    stage = MqttPoolAsr(options, None)
    stage.load()
    try:
        with pytest.raises(PoolUnavailable, match="not connected"):
            stage.transcribe(silence(1.0))
    finally:
        stage.close()


def test_voiced_worker_refuses_an_anonymous_broker_and_says_how_to_override(mosquitto, tmp_path):
    import subprocess
    import sys

    config = tmp_path / "anonymous.toml"
    config.write_text(
        '[pipeline]\nasr = ["mqtt-pool", "whisper-ctranslate2"]\n'
        f'[stages.asr.mqtt-pool.broker]\nhost = "127.0.0.1"\nport = {mosquitto.port}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "voiced.cli", "--config", str(config), "worker", "--id", "x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "needs a login" in done.stderr and "allow_anonymous = true" in done.stderr


def results_for(recorder, job: str) -> list[dict]:
    out = []
    for topic, payload, _ in list(recorder.messages):
        if "/reply/" in topic:
            reply = json.loads(payload)
            if reply["type"] == "result" and reply["id"] == job:
                out.append(reply)
    return out


def test_jobs_are_keyed_by_run_and_the_same_utterance_of_a_run_is_answered_once(
    mosquitto, pool, speech, mqtt_recorder, tmp_path
):
    replies = mqtt_recorder("voiced/asr-pool/reply/#")
    stage = front_end(mosquitto)
    chain = EngineChain("asr", [("mqtt-pool", stage)], lambda event: None)
    chain.load()
    try:
        wait_online(stage, 3, pool)
        # the chain hands the pool the run the utterance belongs to
        _, transcript = chain.call("transcribe", speech[0], None, run_id="run-7", site_id="hall")
        assert "kitchen" in transcript.text.lower()
        assert transcript.data["run_id"] == "run-7"
        job = transcript.data["job"]
        assert job.startswith("run-7-")

        # asked again while in flight and after: one job, one answer, the same text
        call = StageCall("run-8", "hall")
        with ThreadPoolExecutor(2) as both:
            twice = list(both.map(lambda a: stage.transcribe(a, call=call), [speech[1]] * 2))
        again = stage.transcribe(speech[1], call=call)
        assert {t.data["job"] for t in (*twice, again)} == {twice[0].data["job"]}
        assert {t.text for t in (*twice, again)} == {twice[0].text}
        assert "bedroom" in again.text.lower()
        # another utterance of the same run is another job
        other = stage.transcribe(speech[2], call=call)
        assert other.data["job"] != again.data["job"] and "time" in other.text.lower()
        assert stage.stats.jobs == 3 and stage.stats.asked_again == 2

        # the broker delivering the first job again (three times, round the three workers):
        # the worker that answered it answers from memory, the front end keeps its first answer
        redelivered = Job(job, stage.client_id, time.time() + 30, speech[0], run_id="run-7")
        for worker in ("w1", "w2", "w3"):
            stage.connection.publish(f"voiced/asr-pool/jobs/{worker}", redelivered.encode(), 1)
        replies.wait_for(lambda _: len(results_for(replies, job)) >= 4, timeout=60)
        deadline = time.monotonic() + 10
        while stage.stats.duplicates_dropped < 3 and time.monotonic() < deadline:
            time.sleep(0.05)  # the front end's own subscription gets them a moment later
        assert stage.stats.duplicates_dropped == 3
        assert stage.stats.answered == 3
        logs = "".join(w.log.read_text(errors="replace") for w in pool.values())
        assert f"job {job[:12]} redelivered; same answer" in logs
    finally:
        chain.close()


async def test_an_early_commit_draft_goes_to_the_pool_as_a_job_of_its_run(
    mosquitto, tmp_path, mqtt_recorder
):
    replies = mqtt_recorder("voiced/asr-pool/reply/#")
    worker = WorkerProcess(write_pool_config(tmp_path, mosquitto), "w1", tmp_path)
    path = tmp_path / "command.wav"
    write_wav(path, silence(0.4) + steady_piper("turn on the kitchen lights") + silence(1.5))
    try:
        probe = front_end(mosquitto, client_id="probe")
        wait_online(probe, 1, {"w1": worker})
        probe.close()
        _, events = await run_pipeline(
            overrides(
                vad={"early_commit": True},
                pipeline={"asr": ["mqtt-pool", "whisper-ctranslate2"]},
                stages={
                    "source": {"file": {"path": str(path), "realtime": True}},
                    "asr": {"mqtt-pool": pool_settings(mosquitto)},
                },
            )
        )
    finally:
        worker.stop()
    [transcript] = events.of("transcript")
    run_id = events.runs()[0]
    assert transcript.data["engine"] == "mqtt-pool" and "kitchen" in transcript.data["text"].lower()
    jobs = {reply["id"] for reply in claims(replies)}
    assert jobs and transcript.data["job"] in jobs
    # every job of the run, the draft during the pause included, is keyed by the run
    assert all(job.startswith(f"{run_id}-") for job in jobs), (run_id, jobs)
    assert not events.of("engine-fallback")
