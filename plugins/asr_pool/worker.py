"""``voiced worker``: take utterances from the pool's shared subscription and transcribe them.

The worker's engines are the config's ``pipeline.asr`` without the pool itself. Each job is
claimed, transcribed, answered (QoS 1) and only then acknowledged, so a worker that dies
mid-utterance leaves it with the broker; its will (``online: false``, retained) tells the front
ends at once, and they publish the job again for the other workers.
"""

from __future__ import annotations

import argparse
import logging
import os
import queue
import signal
import socket
import sys
import threading
import time
from collections import OrderedDict
from typing import Any

import paho.mqtt.client as paho
from voiced_plugins.mqtt.client import Will

from voiced.api.events import Event
from voiced.api.host import EngineChain

from .connection import PoolConnection
from .options import PoolConfigError, PoolOptions
from .wire import Job, Reply, Topics, worker_status

log = logging.getLogger(__name__)

POOL_STAGE = "mqtt-pool"
ANSWERS_KEPT = 500  # recent answers by job id: a redelivered job is answered, not transcribed


class PoolWorker:
    def __init__(self, options: PoolOptions, settings: Any, chain: EngineChain, worker_id: str):
        self.options = options
        self.chain = chain
        self.worker_id = worker_id
        self.topics = Topics(options.prefix, options.group)
        broker = options.broker_options(settings)
        client_id = options.client_id or f"voiced-asr-worker-{worker_id}"
        self.jobs: queue.Queue[paho.MQTTMessage] = queue.Queue()
        self.done = 0
        self.answered_again = 0
        self._answers: OrderedDict[str, Reply] = OrderedDict()  # by job id, bounded
        self.connection = PoolConnection(
            broker.model_copy(update={"client_id": client_id}),
            session_expiry=options.session_expiry,
            receive_maximum=1,
            manual_ack=True,
            will=Will(self.topics.worker(worker_id), worker_status(worker_id, False).decode()),
            on_job_message=self.jobs.put,
            on_connect=self._announce,
        )

    def run(self, stop: threading.Event) -> None:
        self.connection.subscribe(self.topics.shared_jobs, 1)
        self.connection.start()
        try:
            while not stop.is_set():
                try:
                    message = self.jobs.get(timeout=0.2)
                except queue.Empty:
                    continue
                try:
                    self.handle(message)
                except Exception:
                    log.exception("worker %s: a job failed", self.worker_id)
        finally:
            self.connection.publish(
                self.topics.worker(self.worker_id),
                worker_status(self.worker_id, False),
                qos=1,
                retain=True,
            )
            time.sleep(0.2)
            self.connection.stop()

    def handle(self, message: paho.MQTTMessage) -> None:
        try:
            job = Job.decode(message.payload)
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("worker %s: dropped a malformed job: %s", self.worker_id, exc)
            self.connection.ack(message.mid)
            return
        if job.deadline < time.time():
            log.info("worker %s: job %s past its deadline; dropped", self.worker_id, job.id[:8])
            self.connection.ack(message.mid)
            return
        earlier = self._answers.get(job.id)
        if earlier is not None:  # redelivered (the broker lost our ack): answer it once more,
            self.answered_again += 1  # the front end keeps the first answer
            log.info("worker %s: job %s redelivered; same answer", self.worker_id, job.id[:12])
            self._publish_then_ack(job, earlier, message.mid)
            return
        self._reply(job, Reply(job.id, "claim", self.worker_id))
        started = time.monotonic()
        try:
            engine, transcript = self.chain.call(
                "transcribe", job.audio, job.language, run_id=job.run_id
            )
        except Exception as exc:
            reply = Reply(job.id, "error", self.worker_id, message=f"{type(exc).__name__}: {exc}")
        else:
            reply = Reply(
                job.id,
                "result",
                self.worker_id,
                text=transcript.text,
                language=transcript.language,
                engine=engine,
                asr_s=round(time.monotonic() - started, 4),
            )
        if reply.type == "result":
            self._answers[job.id] = reply
            while len(self._answers) > ANSWERS_KEPT:
                self._answers.popitem(last=False)
        self._publish_then_ack(job, reply, message.mid)
        self.done += 1
        log.info("worker %s: job %s answered (%s)", self.worker_id, job.id[:12], reply.type)

    def _publish_then_ack(self, job: Job, reply: Reply, mid: int) -> None:
        info = self._reply(job, reply)
        # paho keeps a QoS 1 message while the broker is away and sends it on reconnect;
        # the job is acknowledged once the answer is out (or its deadline has passed)
        while not info.is_published() and time.time() < job.deadline:
            time.sleep(0.02)
        self.connection.ack(mid)

    def _reply(self, job: Job, reply: Reply) -> Any:
        return self.connection.publish(job.reply, reply.encode(), qos=1)

    def _announce(self) -> None:
        name, engine = self.chain.loaded[0] if self.chain.loaded else ("", None)
        model = str(getattr(getattr(engine, "options", None), "model", ""))
        status = worker_status(
            self.worker_id, True, engine=name, model=model, host=socket.gethostname()
        )
        self.connection.publish(self.topics.worker(self.worker_id), status, qos=1, retain=True)


# -- the command ----------------------------------------------------------------------------


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Serve the ASR pool: take utterances from the MQTT broker's shared subscription "
        "($share/<group>/<prefix>/jobs) and answer them with the configured pipeline.asr "
        "engines. Broker and pool settings: [stages.asr.mqtt-pool]."
    )
    parser.add_argument("--id", help="worker id (stable: it names the persistent session)")


def run_command(args: argparse.Namespace) -> int:
    from voiced.api.config import ConfigError, load_settings, stage_base_name
    from voiced.api.host import load_plugins, make_stage, setup_logging

    setup_logging(args.log_level or os.environ.get("VOICED_LOG_LEVEL", "INFO"))
    try:
        settings = load_settings(args.config)
        host = load_plugins(settings.plugins.disabled)
        options = PoolOptions.model_validate(settings.stage_options("asr", POOL_STAGE))
        names = [n for n in settings.pipeline.asr if stage_base_name(n) != POOL_STAGE]
        if not names:
            raise ConfigError("pipeline.asr names no engine besides mqtt-pool for the worker")
        engines = [(n, make_stage(host, settings, "asr", n, app=None)) for n in names]
        chain = EngineChain("asr", engines, _log_event, retry_after=30.0)
        worker = PoolWorker(options, settings, chain, args.id or socket.gethostname())
    except (ConfigError, PoolConfigError, ValueError) as exc:
        print(f"voiced worker: {exc}", file=sys.stderr)
        return 2
    chain.load()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    log.info(
        "worker %s: serving %s on %s with %s",
        worker.worker_id,
        worker.topics.shared_jobs,
        worker.connection.broker,
        ", ".join(n for n, _ in chain.loaded),
    )
    worker.run(stop)
    chain.close()
    return 0


def _log_event(event: Event) -> None:
    log.info("%s %s", event.type, event.data)
