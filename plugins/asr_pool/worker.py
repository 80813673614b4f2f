"""``voiced worker``: take utterances from this worker's jobs topic and transcribe them.

The worker's engines are the config's ``pipeline.asr`` without the pool itself. It takes jobs
from its own topic (``<prefix>/jobs/<worker id>``): each is checked against the schema (a job
that breaks it is answered ``refused``), claimed, transcribed, answered (QoS 1) to the reply
topic the two ids fix, and only then acknowledged, so a worker that dies mid-utterance leaves
it with the broker; its will (``online: false``, retained) tells the front ends at once, and
they send the job to another live worker. SIGTERM stops it within a second even mid-job.

The home travels with the work: each front end's home grammar comes retained on
``<prefix>/grammar/<front>/<language>`` and is built once per digest in the background
(grammars.py); a job names the digest, and the engines (made with a ``JobApp``) recognize it
with that home, as the front end's own engine would. A job whose home is not built yet is
transcribed without it, and the reply says so (``data.home.status``).
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
from .grammars import JobApp, WorkerGrammars
from .options import PoolConfigError, PoolOptions
from .wire import SAFE_ID, BadMessage, Job, Reply, Topics, worker_status

log = logging.getLogger(__name__)

POOL_STAGE = "mqtt-pool"
ANSWERS_KEPT = 500  # recent answers by job id: a redelivered job is answered, not transcribed


class PoolWorker:
    def __init__(
        self,
        options: PoolOptions,
        settings: Any,
        chain: EngineChain,
        worker_id: str,
        app: JobApp | None = None,
    ):
        if not SAFE_ID.fullmatch(worker_id):
            raise ValueError(f"worker id {worker_id!r} must match {SAFE_ID.pattern}")
        self.options = options
        self.chain = chain
        self.worker_id = worker_id
        self.app = app  # what the engines ask for the home: set to each job's
        self.grammars = WorkerGrammars(
            options.max_grammar_bytes, options.grammars_kept, self._warm_engines
        )
        self.topics = Topics(options.prefix, options.group)
        self._grammar_prefix = f"{self.topics.prefix}/grammar/"
        broker = options.broker_options(settings)
        client_id = options.client_id or f"voiced-asr-worker-{worker_id}"
        self.jobs: queue.Queue[paho.MQTTMessage] = queue.Queue()
        self.done = 0
        self.refused = 0
        self.answered_again = 0
        self._serving: threading.Thread | None = None
        self._answers: OrderedDict[str, Reply] = OrderedDict()  # by job id, bounded
        self.connection = PoolConnection(
            broker.model_copy(update={"client_id": client_id}),
            session_expiry=options.session_expiry,
            receive_maximum=1,
            max_packet_bytes=options.max_packet_bytes,
            manual_ack=True,
            will=Will(self.topics.worker(worker_id), worker_status(worker_id, False).decode()),
            on_job_message=self._route,
            on_connect=self._announce,
        )

    def run(self, stop: threading.Event) -> None:
        """Serve jobs on a thread until ``stop``; a job still being transcribed then is left
        unacknowledged (the front ends send it to another worker when the status says offline)."""
        self.connection.subscribe(self.topics.jobs(self.worker_id), 1)
        if self.app is not None:  # retained: each front end's home grammar, again on reconnect
            self.connection.subscribe(self.topics.grammars, 0)
            self.grammars.start(stop)
        self.connection.start()
        serving = threading.Thread(target=self._serve, args=(stop,), name="pool-jobs", daemon=True)
        self._serving = serving
        serving.start()
        try:
            stop.wait()
        finally:
            self.connection.publish(
                self.topics.worker(self.worker_id),
                worker_status(self.worker_id, False),
                qos=1,
                retain=True,
            )
            time.sleep(0.2)
            self.connection.stop()
            serving.join(1.0)

    def _route(self, message: paho.MQTTMessage) -> None:
        """A job to the jobs queue; a front end's home grammar to be checked and built."""
        if message.topic.startswith(self._grammar_prefix):
            self.grammars.offer(message.topic, message.payload)
        else:
            self.jobs.put(message)

    def _warm_engines(self, grammar: Any, language: str) -> None:
        for _, engine in self.chain.loaded:
            warm = getattr(engine, "warm_home", None)
            if callable(warm):
                warm(grammar, language)

    @property
    def jobs_thread_alive(self) -> bool:
        return self._serving is not None and self._serving.is_alive()

    def _serve(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                message = self.jobs.get(timeout=0.2)
            except queue.Empty:
                continue
            try:
                self.handle(message)
            except Exception:
                log.exception("worker %s: a job failed", self.worker_id)

    def handle(self, message: paho.MQTTMessage) -> None:
        """Answer (or refuse) one job, then acknowledge it: exactly once, whatever it holds."""
        try:
            answer = self._answer(message.payload)
        except BadMessage as exc:
            self.refused += 1
            log.warning("worker %s: refused a job: %s", self.worker_id, exc)
            answer = self._refusal(exc)
        except Exception:
            self.connection.ack(message.mid)
            raise
        if answer is None:
            self.connection.ack(message.mid)
            return
        front, reply, deadline = answer
        self._publish_then_ack(front, reply, deadline, message.mid)

    def _refusal(self, exc: BadMessage) -> tuple[str, Reply, float] | None:
        if exc.front is None:
            return None
        reply = Reply(exc.job or "", "refused", self.worker_id, message=str(exc)[:1000])
        return exc.front, reply, time.time() + 5.0

    def _answer(self, payload: bytes) -> tuple[str, Reply, float] | None:
        job = Job.decode(payload, self.options.max_audio_bytes)
        if job.deadline < time.time():
            log.info("worker %s: job %s past its deadline; dropped", self.worker_id, job.id[:8])
            return None
        earlier = self._answers.get(job.id)
        if earlier is not None:  # redelivered (the broker lost our ack): answer it once more,
            self.answered_again += 1  # the front end keeps the first answer
            log.info("worker %s: job %s redelivered; same answer", self.worker_id, job.id[:12])
            return job.front, earlier, job.deadline
        self._reply(job.front, Reply(job.id, "claim", self.worker_id))
        reply = self._transcribe(job)
        if reply.type == "result":
            self._answers[job.id] = reply
            while len(self._answers) > ANSWERS_KEPT:
                self._answers.popitem(last=False)
        self.done += 1
        log.info("worker %s: job %s answered (%s)", self.worker_id, job.id[:12], reply.type)
        return job.front, reply, job.deadline

    def _transcribe(self, job: Job) -> Reply:
        started = time.monotonic()
        source = self.topics.grammar(job.front, job.language or "")
        home, status = self.grammars.lookup(job.grammar, source) if self.app else (None, "none")
        if job.grammar is not None and status != "used":
            log.info(
                "worker %s: job %s not with its home (grammar %s: %s)",
                self.worker_id,
                job.id[:12],
                job.grammar[:12],
                status,
            )
        if self.app is not None:
            self.app.home = home
        try:
            engine, transcript = self.chain.call(
                "transcribe", job.audio, job.language, run_id=job.run_id
            )
        except Exception as exc:
            return Reply(job.id, "error", self.worker_id, message=f"{type(exc).__name__}: {exc}")
        finally:
            if self.app is not None:
                self.app.home = None
        data: dict[str, Any] = {"home": {"grammar": job.grammar, "status": status}}
        if isinstance(transcript.data.get("decision"), dict):
            data["decision"] = transcript.data["decision"]
        return Reply(
            job.id,
            "result",
            self.worker_id,
            text=transcript.text,
            language=transcript.language,
            engine=engine,
            asr_s=round(time.monotonic() - started, 4),
            data=data,
        )

    def _publish_then_ack(self, front: str, reply: Reply, deadline: float, mid: int) -> None:
        info = self._reply(front, reply)
        # paho keeps a QoS 1 message while the broker is away and sends it on reconnect;
        # the job is acknowledged once the answer is out (or its deadline has passed)
        while not info.is_published() and time.time() < deadline:
            time.sleep(0.02)
        self.connection.ack(mid)

    def _reply(self, front: str, reply: Reply) -> Any:
        return self.connection.publish(self.topics.reply(front, self.worker_id), reply.encode(), 1)

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
        "Serve the ASR pool: take utterances from the MQTT broker "
        "(<prefix>/jobs/<worker id>) and answer them with the configured pipeline.asr "
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
        app = JobApp(settings, options.grammars_kept)  # the engines hear each job's home
        engines = [(n, make_stage(host, settings, "asr", n, app=app)) for n in names]
        chain = EngineChain("asr", engines, _log_event, retry_after=30.0)
        worker = PoolWorker(options, settings, chain, args.id or socket.gethostname(), app)
    except (ConfigError, PoolConfigError, ValueError) as exc:
        print(f"voiced worker: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    chain.load()
    log.info(
        "worker %s: serving %s on %s with %s",
        worker.worker_id,
        worker.topics.jobs(worker.worker_id),
        worker.connection.broker,
        ", ".join(n for n, _ in chain.loaded),
    )
    worker.run(stop)
    if not worker.jobs_thread_alive:
        chain.close()  # an engine still transcribing is left to the process's exit
    return 0


def _log_event(event: Event) -> None:
    log.info("%s %s", event.type, event.data)
