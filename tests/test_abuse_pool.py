"""The worker pool against hostile jobs and hostile workers: real ``voiced worker`` processes
and real paho clients on a real mosquitto on 127.0.0.1. A job that breaks the schema is refused
exactly once and never comes back; the audio cap refuses a 10-minute job at once; a worker obeys
SIGTERM mid-job; a worker's huge transcript is refused by the front end with memory bounded;
replies go only to the topic the front end fixes; an offline worker gets no job; with two
workers two jobs are in flight at once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import paho.mqtt.client as paho
import psutil
import pytest
from loop_lag import loop_lag
from mqtt_fixtures import Mosquitto, Recorder
from paho.mqtt.enums import CallbackAPIVersion
from pipeline_helpers import overrides, run_pipeline
from pool_processes import WorkerProcess, pool_settings, write_pool_config
from speech import silence, steady_piper
from voiced_plugins.asr_pool.frontend import MqttPoolAsr
from voiced_plugins.asr_pool.options import PoolOptions
from voiced_plugins.asr_pool.wire import Reply, worker_status

from voiced.audio import write_wav

pytestmark = pytest.mark.slow

PREFIX = "voiced/asr-pool"
TEN_MINUTES = b"\0\1" * (16000 * 600)  # 19.2 MB of 16 kHz 16-bit PCM


def job_payload(job_id: str, front: str, audio: bytes, **header) -> bytes:
    fields = {"id": job_id, "front": front, "deadline": time.time() + 60, **header}
    return json.dumps(fields).encode() + b"\n" + audio


def replies_of(recorder: Recorder, kind: str, job_id: str | None = None) -> list[dict]:
    out = []
    for topic, payload, _ in list(recorder.messages):
        if "/reply/" not in topic:
            continue
        reply = json.loads(payload)
        if reply["type"] == kind and job_id in (None, reply["id"]):
            out.append({**reply, "topic": topic})
    return out


def front_end(mosquitto: Mosquitto, **extra) -> MqttPoolAsr:
    stage = MqttPoolAsr(PoolOptions.model_validate({**pool_settings(mosquitto), **extra}), None)
    stage.load()
    return stage


def wait_online(stage: MqttPoolAsr, workers: list[WorkerProcess], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not {w.worker_id for w in workers} <= set(stage.online_workers()):
        for worker in workers:
            assert worker.process.poll() is None, worker.tail()
        assert time.monotonic() < deadline, f"workers online: {stage.online_workers()}"
        time.sleep(0.1)


@pytest.fixture
def config(mosquitto: Mosquitto, tmp_path: Path) -> Path:
    return write_pool_config(tmp_path, mosquitto)


@pytest.fixture
def started(config: Path, tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    """Worker processes a test starts (``started.append(WorkerProcess(...))``), stopped after."""
    workers: list[WorkerProcess] = []
    yield workers
    for worker in workers:
        worker.stop()


def test_a_job_whose_deadline_is_a_string_is_refused_once_and_never_comes_back(
    mosquitto, config, tmp_path, started, mqtt_recorder
):
    hostile = mqtt_recorder(f"{PREFIX}/reply/hostile/+")
    started.append(WorkerProcess(config, "w1", tmp_path))
    stage = front_end(mosquitto)
    try:
        wait_online(stage, started)
        bad = job_payload("bad-1", "hostile", silence(1.0), deadline="soon")
        hostile.client.publish(f"{PREFIX}/jobs/w1", bad, qos=1)
        [refused] = hostile.wait_for(lambda _: replies_of(hostile, "refused"), timeout=30)
        assert refused["id"] == "bad-1" and refused["topic"] == f"{PREFIX}/reply/hostile/w1"
        assert "'deadline' must be a number, not str" in refused["message"]

        # the worker keeps taking jobs
        transcript = stage.transcribe(steady_piper("turn on the kitchen lights"))
        assert "kitchen" in transcript.text.lower() and transcript.data["worker"] == "w1"

        # the refused job was acknowledged: the worker's session does not hand it back
        started[0].terminate(timeout=15)
        started.append(WorkerProcess(config, "w1", tmp_path))
        stage.workers.pop("w1", None)
        wait_online(stage, started[1:])
        again = stage.transcribe(steady_piper("turn off the bedroom lamp"))
        assert "bedroom" in again.text.lower()
        assert len(replies_of(hostile, "refused")) == 1
    finally:
        stage.close()


def test_a_ten_minute_job_is_refused_at_once_and_sigterm_is_obeyed_mid_job(
    mosquitto, config, tmp_path, started, mqtt_recorder
):
    hostile = mqtt_recorder(f"{PREFIX}/reply/hostile/+")
    started.append(WorkerProcess(config, "w1", tmp_path))
    stage = front_end(mosquitto)
    try:
        wait_online(stage, started)
        sent = time.monotonic()
        hostile.client.publish(f"{PREFIX}/jobs/w1", job_payload("long", "hostile", TEN_MINUTES), 1)
        [refused] = hostile.wait_for(lambda _: replies_of(hostile, "refused", "long"), timeout=60)
        assert time.monotonic() - sent < 30  # at once, a generous margin on a shared machine
        assert "over the cap" in refused["message"]

        # a job under the cap (29 s of speech), SIGTERM as soon as it is claimed
        phrase = steady_piper("set a timer for five minutes and play some music") + silence(0.3)
        audio = (phrase * (29 * 32000 // len(phrase) + 1))[: 29 * 32000]
        hostile.client.publish(f"{PREFIX}/jobs/w1", job_payload("busy", "hostile", audio), 1)
        hostile.wait_for(lambda _: replies_of(hostile, "claim", "busy"), timeout=60)
        assert started[0].terminate(timeout=5) < 5
    finally:
        stage.close()


class HostileWorker:
    """A paho client that says it is an online worker and answers every job with ``text``."""

    def __init__(self, mosquitto: Mosquitto, worker_id: str, text: str) -> None:
        self.worker_id, self.text = worker_id, text
        self.jobs = 0
        self.client = paho.Client(
            CallbackAPIVersion.VERSION2, client_id=f"hostile-{worker_id}", protocol=paho.MQTTv5
        )
        self.client.username_pw_set(mosquitto.username, mosquitto.password)
        self.client.on_message = self._job
        self.client.connect("127.0.0.1", mosquitto.auth_port)
        self.client.subscribe(f"{PREFIX}/jobs/{worker_id}", 1)
        self.client.publish(
            f"{PREFIX}/workers/{worker_id}", worker_status(worker_id, True), 1, retain=True
        )
        self.client.loop_start()

    def _job(self, client, userdata, message) -> None:
        header = json.loads(message.payload.partition(b"\n")[0])
        self.jobs += 1
        reply = Reply(header["id"], "result", self.worker_id, text=self.text)
        topic = f"{PREFIX}/reply/{header['front']}/{self.worker_id}"
        client.publish(topic, reply.encode(), 1)

    def close(self) -> None:
        self.client.publish(f"{PREFIX}/workers/{self.worker_id}", b"", 1, retain=True)
        time.sleep(0.2)
        self.client.loop_stop()
        self.client.disconnect()


async def test_a_hostile_workers_ten_megabyte_transcript_is_refused_and_the_local_engine_answers(
    mosquitto, tmp_path
):
    evil = HostileWorker(mosquitto, "evil", "turn on the lights " * 550_000)  # 10.4 MB
    path = tmp_path / "command.wav"
    write_wav(path, silence(0.4) + steady_piper("turn on the kitchen lights") + silence(1.2))
    process = psutil.Process()
    rss_before = process.memory_info().rss
    peak = [rss_before]
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.wait(0.05):
            peak[0] = max(peak[0], process.memory_info().rss)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    try:
        with loop_lag() as lag:
            _, events = await run_pipeline(
                overrides(
                    pipeline={"asr": ["mqtt-pool", "whisper-ctranslate2"], "stage_timeout": 60},
                    stages={
                        "source": {"file": {"path": str(path)}},
                        "asr": {"mqtt-pool": pool_settings(mosquitto, timeout=60)},
                    },
                )
            )
        took = time.monotonic() - started
    finally:
        sampling.set()
        sampler.join()
        evil.close()
    assert evil.jobs == 1
    [fallback] = events.of("engine-fallback")
    assert fallback.data["engine"] == "mqtt-pool"
    assert "worker evil" in fallback.data["reason"] and "over the cap" in fallback.data["reason"]
    [transcript] = events.of("transcript")
    assert transcript.data["engine"] == "whisper-ctranslate2"
    assert "kitchen" in transcript.data["text"].lower()
    assert took < 45  # the run did not sit out the pool's 60 s timeout (a generous margin)
    # the 10 MB payload is held once by paho, never parsed; the bound is loose because the
    # run also loads the local Whisper, its search's float32 decoder (+115 MB, ~60 MB more
    # while it is read) and the pipeline (~560 MB measured before that decoder; 1.1 GB when
    # the payload was held many times)
    assert peak[0] - rss_before < 850 * 1024 * 1024
    lag.check()


def test_a_reply_goes_to_the_topic_the_front_end_fixes_never_one_a_job_names(
    mosquitto, config, tmp_path, started, mqtt_recorder
):
    everything = mqtt_recorder("#")
    started.append(WorkerProcess(config, "w1", tmp_path))
    stage = front_end(mosquitto)
    try:
        wait_online(stage, started)
        job = job_payload("aimed", "f1", steady_piper("what time is it"))
        header, _, audio = job.partition(b"\n")
        aimed = {**json.loads(header), "reply": "voiced/kitchen/command/say"}
        stage.connection.publish(f"{PREFIX}/jobs/w1", json.dumps(aimed).encode() + b"\n" + audio, 1)
        [result] = everything.wait_for(lambda _: replies_of(everything, "result", "aimed"), 60)
        assert result["topic"] == f"{PREFIX}/reply/f1/w1"
        assert not [t for t, _, _ in everything.messages if "command/say" in t]
    finally:
        stage.close()


def test_an_offline_worker_gets_no_new_job_and_two_workers_take_two_jobs_at_once(
    mosquitto, config, tmp_path, started, mqtt_recorder
):
    published = mqtt_recorder(f"{PREFIX}/jobs/#")
    started.extend(WorkerProcess(config, w, tmp_path) for w in ("w1", "w2", "w3"))
    stage = front_end(mosquitto)
    speech = [steady_piper(t) for t in ("turn on the kitchen lights", "open the garage door")]
    try:
        wait_online(stage, started)
        started[2].kill()  # its will says offline
        deadline = time.monotonic() + 30
        while "w3" in stage.online_workers():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        sent = time.monotonic()
        with ThreadPoolExecutor(2) as rooms:  # pipeline.asr_workers = 2: two rooms at once
            transcripts = list(rooms.map(stage.transcribe, speech * 2))
        assert all(t.data["sends"] == 1 for t in transcripts)  # none waited for a resend
        assert {t.data["worker"] for t in transcripts} == {"w1", "w2"}
        assert stage.stats.max_in_flight == 2
        assert time.monotonic() - sent < 60
        assert "kitchen" in transcripts[0].text.lower() and "garage" in transcripts[1].text.lower()

        # under load (four rooms, two workers: a job waits behind another at each worker) a
        # merely queued job is never published again; only a worker's going offline resends
        with ThreadPoolExecutor(4) as rooms:
            loaded = list(rooms.map(stage.transcribe, speech * 2))
        assert stage.stats.max_in_flight == 4 and stage.stats.resent == 0
        jobs = [json.loads(p.partition(b"\n")[0])["id"] for _, p, _ in list(published.messages)]
        assert len(jobs) == len(set(jobs)) == 8  # each job published once
        assert {t.data["job"] for t in (*transcripts, *loaded)} == set(jobs)
        assert all(t.data["sends"] == 1 for t in loaded)
    finally:
        stage.close()
