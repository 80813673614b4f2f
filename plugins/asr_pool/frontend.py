"""Stage ``mqtt-pool``: the front end sends each utterance to a live worker, takes its answer.

Each ``transcribe()`` is a job keyed by its run (``<run id>-<audio digest>``, from the
``StageCall`` the chain passes), with this front end's id and a deadline, published with QoS 1
to the topic of the live worker (by its retained status and will) with the fewest of this front
end's jobs in flight; so ``pipeline.asr_workers`` equal to the number of workers keeps each of
them busy. The worker answers on ``<prefix>/reply/<front id>/<worker id>``: the front end fixes
that topic, a job cannot name another. A job is sent again only when its worker goes offline
(its will), to another live worker; answers are deduplicated by the key: the first result wins,
later ones are counted and dropped, and the same utterance of the same run asked again is
answered once. A reply that breaks the schema or the size cap fails its worker's jobs at once.
No worker online, no broker, audio over the cap, or no answer by the deadline:
``PoolUnavailable``, so the next engine of the chain (a local Whisper) serves and an
``engine-fallback`` event says why.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as paho

from voiced.api.audio import PIPELINE_FORMAT
from voiced.api.intents import Transcript
from voiced.api.recognition import without_home
from voiced.api.stages import StageCall

from .connection import PoolConnection
from .options import PoolOptions
from .publisher import HomePublisher
from .wire import BadMessage, Job, Reply, Topics, job_id, safe_id

log = logging.getLogger(__name__)

ANSWERED_KEPT = 2_000  # answers remembered by job id: late duplicates dropped, asks again served
WORKERS_BACK_S = 5.0
"""How long a new job waits for a worker back online when none is and the last went offline
that recently (a broker restart takes every worker offline at once; they are back within
seconds); otherwise, or after it, the next engine of the chain serves at once."""


class PoolUnavailable(RuntimeError):
    """No worker could answer: broker away, no worker online, or the deadline passed."""


class PoolError(RuntimeError):
    """A worker answered with an error."""


@dataclass
class _Pending:
    job: Job
    sent_at: float
    worker: str | None = None  # whom it was sent to
    claimed_by: str | None = None
    sends: int = 1
    reply: Reply | None = None
    failure: str | None = None  # why the ask that sent it gave up
    waiting: bool = False  # its worker went offline with none left: sent to the next online
    done: threading.Event = field(default_factory=threading.Event)


@dataclass
class PoolStats:
    jobs: int = 0
    answered: int = 0
    resent: int = 0
    duplicates_dropped: int = 0
    late_dropped: int = 0
    bad_replies: int = 0  # replies that broke the schema or the size cap
    refused: int = 0  # jobs a worker refused (schema)
    in_flight: int = 0
    max_in_flight: int = 0  # most jobs sent to workers and not yet answered, at once
    asked_again: int = 0  # the same run's utterance asked again: answered from the first job


def recognized_with(data: dict[str, Any]) -> dict[str, Any]:
    """What a worker's reply says of how it recognized: the home it used (``home``: grammar
    digest and status; ``previous …``: the front end's home before its last change, while
    the new one was being built), its recognizer's ``decision``, and, without a home, which
    steps it skipped and why (``without_home``)."""
    home = data.get("home")
    if not isinstance(home, dict) or not isinstance(home.get("status"), str):
        home = {"status": "not said (an older worker)"}
    home = {
        k: v if v is None else str(v)[:300] for k, v in home.items() if k in ("grammar", "status")
    }
    out: dict[str, Any] = {"home": home}
    if isinstance(data.get("decision"), dict):
        out["decision"] = data["decision"]
    if home["status"] != "used" and not home["status"].startswith("previous "):
        out["without_home"] = without_home(f"the worker had no home grammar: {home['status']}")
    return out


class MqttPoolAsr:
    """An ASR chain member whose engine is the pool of ``voiced worker`` processes."""

    name = "mqtt-pool"
    device = "mqtt"

    def __init__(self, options: PoolOptions, app: Any) -> None:
        settings = getattr(app, "settings", None)
        self.options = options
        self.broker = options.broker_options(settings)  # refuses an anonymous connection
        self.topics = Topics(options.prefix, options.group)
        site = getattr(settings, "site_id", "default")
        self.client_id = safe_id(options.client_id or f"voiced-asr-front-{site}")
        self.reply_topic = self.topics.replies(self.client_id)
        self._reply_prefix = self.reply_topic[:-1]
        self.default_language = getattr(settings, "language", None)
        self.workers: dict[str, dict[str, Any]] = {}
        self.stats = PoolStats()
        self._pending: dict[str, _Pending] = {}
        self._answered: OrderedDict[str, Reply] = OrderedDict()  # recent answers, bounded
        self._lock = threading.Lock()
        self._worker_back = threading.Condition(self._lock)
        self._last_offline = float("-inf")  # when a worker was last seen going offline
        self._connected = threading.Event()
        self.connection = PoolConnection(
            self.broker.model_copy(update={"client_id": self.client_id}),
            session_expiry=options.session_expiry,
            max_packet_bytes=options.max_packet_bytes,
            on_job_message=self._on_message,
            on_connect=self._on_connect,
            on_disconnect=self._connected.clear,
        )
        self.home = HomePublisher(
            app if options.send_home else None,
            self.connection.publish,
            self.topics,
            self.client_id,
            options.max_grammar_bytes,
        )
        self.info: dict[str, Any] = {"engine": self.name, "broker": str(self.connection.broker)}

    # -- stage -----------------------------------------------------------------------------

    def load(self) -> None:
        """Connect (in the background) and subscribe; the broker being away is not fatal."""
        self.connection.subscribe(self.reply_topic, 1)
        self.connection.subscribe(self.topics.workers, 1)
        self.connection.start()
        if not self._connected.wait(self.options.connect_seconds):
            log.warning(
                "ASR pool: broker %s not reachable yet (%s); the next engine serves meanwhile",
                self.connection.broker,
                self.connection.last_error or "no answer",
            )
        else:
            time.sleep(0.2)  # retained worker statuses arrive right after the subscription
        self.info["workers"] = self.online_workers()
        self.info["home"] = self.home.digest(self.default_language)  # for the workers, now

    def _on_connect(self) -> None:
        self._connected.set()
        self.home.republish()

    def transcribe(
        self, audio: bytes, language: str | None = None, *, call: StageCall | None = None
    ) -> Transcript:
        language = language or self.default_language
        run_id = call.run_id if call is not None else None
        if len(audio) > self.options.max_audio_bytes:
            raise PoolUnavailable(
                f"{len(audio) / PIPELINE_FORMAT.bytes_per_second:.1f} s of audio is over the "
                f"pool's cap (max_audio_seconds = {self.options.max_audio_seconds:g})"
            )
        key = job_id(run_id, audio, language)
        job = Job(
            id=key,
            front=self.client_id,
            deadline=time.time() + self.options.timeout,
            audio=audio,
            language=language,
            run_id=run_id,
            grammar=self.home.digest(language),
        )
        mine = _Pending(job, time.monotonic())
        with self._lock:  # checked and claimed at once: two asks of one utterance send one job
            earlier = self._answered.get(key)
            pending = self._pending.get(key)
            if earlier is not None or pending is not None:
                self.stats.asked_again += 1
            else:
                self._pending[key] = mine
                self.stats.jobs += 1
        if earlier is not None:
            return self._transcript(earlier, audio, language, key, run_id, sends=0)
        if pending is not None:  # the same utterance of the same run is in flight: join it
            if not pending.done.wait(max(0.0, pending.job.deadline - time.time())):
                raise PoolUnavailable(f"no answer from the pool within {self.options.timeout:g} s")
            if pending.reply is None:
                raise PoolUnavailable(pending.failure or "the pool did not answer")
            return self._transcript(pending.reply, audio, language, key, run_id, sends=0)
        try:
            reply = self._ask(mine)
        except Exception as exc:
            mine.failure = str(exc)
            raise
        finally:
            with self._lock:
                self._pending.pop(key, None)
            mine.done.set()  # wakes any ask that joined this one
        return self._transcript(reply, audio, language, key, run_id, mine.sends)

    def _ask(self, pending: _Pending) -> Reply:
        if not self.connection.connected and not self._connected.wait(
            min(2.0, self.options.timeout)
        ):
            raise PoolUnavailable(
                f"broker {self.connection.broker} not connected: "
                f"{self.connection.last_error or 'reconnecting'}"
            )
        self._await_worker()
        self._send(pending)
        return self._wait(pending)

    def _await_worker(self) -> None:
        """With no worker online and the last gone offline within ``WORKERS_BACK_S``, wait
        for one back for what is left of that time."""
        with self._lock:
            left = WORKERS_BACK_S - (time.monotonic() - self._last_offline)
            if left > 0 and self._pick() is None:
                self._worker_back.wait_for(lambda: self._pick() is not None, left)

    def _transcript(
        self,
        reply: Reply,
        audio: bytes,
        language: str | None,
        key: str,
        run_id: str | None,
        sends: int,
    ) -> Transcript:
        if reply.type in ("error", "refused"):
            raise PoolError(f"worker {reply.worker}: {reply.message}")
        data = {
            "worker": reply.worker,
            "worker_engine": reply.engine,
            "worker_asr_s": reply.asr_s,
            "job": key,
            "run_id": run_id,
            "sends": sends,
            **recognized_with(reply.data),
        }
        return Transcript.heard(
            reply.text,
            reply.language or language,
            engine=self.name,
            audio_seconds=len(audio) / PIPELINE_FORMAT.bytes_per_second,
            data=data,
        )

    def close(self) -> None:
        self.connection.stop()

    def online_workers(self) -> list[str]:
        with self._lock:
            return sorted(w for w, status in self.workers.items() if status.get("online"))

    # -- internals -------------------------------------------------------------------------

    def _pick(self, exclude: str | None = None) -> str | None:
        """The live worker with the fewest of this front end's jobs in flight (caller locks)."""
        load = {w: 0 for w, s in self.workers.items() if s.get("online") and w != exclude}
        for pending in self._pending.values():
            if pending.worker in load and not pending.done.is_set():
                load[pending.worker] += 1
        return min(load, key=lambda w: (load[w], w)) if load else None

    def _send(self, pending: _Pending, exclude: str | None = None) -> None:
        """Publish the job to a live worker; PoolUnavailable when none is online."""
        with self._lock:
            worker = self._pick(exclude)
            if worker is None:
                raise PoolUnavailable(
                    f"no worker of group {self.options.group!r} online at {self.connection.broker}"
                )
            if pending.worker is None:
                self.stats.in_flight += 1
                self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
            pending.worker, pending.claimed_by = worker, None
            pending.sent_at = time.monotonic()
        self.connection.publish(self.topics.jobs(worker), pending.job.encode(), qos=1)

    def _wait(self, pending: _Pending) -> Reply:
        deadline = time.monotonic() + self.options.timeout
        try:
            if not pending.done.wait(max(0.0, deadline - time.monotonic())):
                by = pending.claimed_by or pending.worker
                raise PoolUnavailable(
                    f"no answer from the pool within {self.options.timeout:g} s (sent to {by})"
                )
        finally:
            with self._lock:
                self.stats.in_flight -= 1
        if pending.reply is None:
            raise PoolError(pending.failure or "the pool did not answer")
        return pending.reply

    def _resend(self, pending: _Pending, why: str) -> None:
        log.info("ASR pool: job %s sent again: %s", pending.job.id[:8], why)
        try:
            self._send(pending, exclude=None if pending.waiting else pending.worker)
        except PoolUnavailable:
            # every worker is offline (a broker restart drops them all at once): the job waits,
            # within its deadline, for the first worker back online
            with self._lock:
                pending.waiting = True
            log.info("ASR pool: job %s waits for a worker online: %s", pending.job.id[:8], why)
            return
        with self._lock:
            pending.waiting = False
            pending.sends += 1
            self.stats.resent += 1

    def _fail(self, pending: _Pending, why: str) -> None:
        pending.failure = why
        pending.done.set()

    def _on_message(self, message: paho.MQTTMessage) -> None:
        if message.topic.startswith(self._reply_prefix):
            worker = message.topic[len(self._reply_prefix) :]
            try:
                reply = Reply.decode(message.payload, self.options.max_reply_bytes)
                if reply.worker != worker:
                    raise BadMessage(f"a reply of worker {reply.worker!r} on {worker!r}'s topic")
            except BadMessage as exc:
                self._bad_reply(worker, str(exc))
                return
            self._on_reply(reply)
        elif message.topic.startswith(self.topics.worker("")):
            self._on_status(message.topic.rsplit("/", 1)[-1], message.payload)

    def _bad_reply(self, worker: str, why: str) -> None:
        """A worker broke the schema: its jobs here fail now (the next engine serves them)."""
        log.warning("ASR pool: worker %s sent a bad reply: %s", worker, why)
        with self._lock:
            self.stats.bad_replies += 1
            mine = [p for p in self._pending.values() if p.worker == worker]
        for pending in mine:
            self._fail(pending, f"worker {worker}: {why}")

    def _on_reply(self, reply: Reply) -> None:
        with self._lock:
            pending = self._pending.get(reply.id)
            if reply.type == "claim":
                if pending is not None and not pending.done.is_set():
                    pending.claimed_by = reply.worker
                return
            if reply.id in self._answered:
                self.stats.duplicates_dropped += 1
                return
            if pending is None:
                self.stats.late_dropped += 1
                return
            self.stats.refused += reply.type == "refused"
            self._answered[reply.id] = reply
            while len(self._answered) > ANSWERED_KEPT:
                self._answered.popitem(last=False)
            self.stats.answered += 1
            pending.reply = reply
            pending.done.set()

    def _on_status(self, worker_id: str, payload: bytes) -> None:
        try:
            status = json.loads(payload) if payload else {"online": False}
        except ValueError:
            return
        if not isinstance(status, dict):
            return
        online = bool(status.get("online"))
        with self._lock:
            if not online and self.workers.get(worker_id, {}).get("online"):
                self._last_offline = time.monotonic()
            self.workers[worker_id] = status
            if online:
                self._worker_back.notify_all()
            orphans = [
                p
                for p in self._pending.values()
                if not p.done.is_set()
                and (p.waiting if online else p.worker == worker_id and not p.waiting)
            ]
        why = f"worker {worker_id} is back online" if online else f"worker {worker_id} went offline"
        for pending in orphans:
            self._resend(pending, why)
