"""The home grammars a worker recognizes with, and the app its engines ask for the home.

Front ends publish their home's grammar retained on ``<prefix>/grammar/<front>/<language>``
(wire.GrammarMessage); a worker checks each message (size cap, header, the digest of its
body), builds the intent stage from it on a thread of its own (once per digest, ~3 s, never
on a job's time), warms its engines' token grammars with it, and keeps the last
``grammars_kept``. A job names the digest it wants; the worker recognizes with that home when
it has it built, and says in its reply which home it used or why none.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .wire import GRAMMAR_EXPANSION, BadMessage, GrammarMessage

log = logging.getLogger(__name__)

FAILURES_KEPT = 32  # digests whose grammar could not be built, remembered (bounded)
SOURCES_KEPT = 64  # grammar topics (front end, language) whose latest built digest is known
WAITING = 4  # grammar messages waiting to be built; more are dropped (logged)


class JobApp:
    """What a worker's engines ask of their app: the home (``stage("intent")``) is the home
    grammar of the job being transcribed (None: the job has none); ``homes_kept`` how many
    homes their token grammars serve at once."""

    def __init__(self, settings: Any, homes_kept: int) -> None:
        self.settings = settings
        self.homes_kept = homes_kept
        self.home: Any = None

    def stage(self, kind: str, name: str | None = None) -> Any:
        return self.home if kind == "intent" else None


class WorkerGrammars:
    """Home grammars by digest: offered from the broker, built in the background, looked up by
    jobs. ``prepare(grammar, language)`` runs after a build (the engines' token grammars)."""

    def __init__(
        self,
        max_bytes: int,
        kept: int,
        prepare: Callable[[Any, str], None] = lambda grammar, language: None,
    ) -> None:
        self.max_bytes = max_bytes
        self.kept = kept
        self.prepare = prepare
        self.refused = 0
        self._built: OrderedDict[str, Any] = OrderedDict()
        self._building: set[str] = set()
        self._failed: OrderedDict[str, str] = OrderedDict()
        self._latest: OrderedDict[str, str] = OrderedDict()  # topic -> its latest built digest
        self._waiting: queue.Queue[tuple[str, GrammarMessage]] = queue.Queue(WAITING)
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self, stop: threading.Event) -> None:
        self._thread = threading.Thread(
            target=self._build_until, args=(stop,), name="pool-grammars", daemon=True
        )
        self._thread.start()

    def offer(self, topic: str, payload: bytes) -> None:
        """A grammar message from the broker (on its network thread: only checks here)."""
        if not payload:
            return  # a front end cleared its retained grammar
        try:
            message = GrammarMessage.decode(payload, self.max_bytes)
        except BadMessage as exc:
            self.refused += 1
            log.warning("worker: refused the home grammar on %s: %s", topic, exc)
            return
        with self._lock:
            if message.digest in self._built or message.digest in self._building:
                return
            self._building.add(message.digest)
            self._failed.pop(message.digest, None)
        try:
            self._waiting.put_nowait((topic, message))
        except queue.Full:
            with self._lock:
                self._building.discard(message.digest)
            log.warning("worker: %d home grammars wait to be built; %s dropped", WAITING, topic)

    def lookup(self, digest: str | None, source: str = "") -> tuple[Any, str]:
        """The home grammar of ``digest`` and what became of it: ``used``; or, while it is not
        built, the latest one built from the same ``source`` topic (the front end's home
        before its last change: ``previous <digest>: <why>``); or None and ``none`` (the job
        names none), ``building``, ``unknown`` or ``refused: <why>``."""
        if digest is None:
            return None, "none"
        with self._lock:
            if digest in self._built:
                self._built.move_to_end(digest)
                return self._built[digest], "used"
            why = self._failed.get(digest)
            status = "building" if digest in self._building else "unknown"
            status = status if why is None else f"refused: {why}"
            previous = self._latest.get(source)
            if previous in self._built:
                return self._built[previous], f"previous {previous[:12]}: {status}"
        return None, status

    def _build_until(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                topic, message = self._waiting.get(timeout=0.2)
            except queue.Empty:
                continue
            self._build(topic, message)

    def _build(self, topic: str, message: GrammarMessage) -> None:
        from voiced_plugins.intent_hassil.portable import grammar_from_data

        started = time.monotonic()
        try:
            grammar = grammar_from_data(message.data(self.max_bytes * GRAMMAR_EXPANSION))
            self.prepare(grammar, message.language)
        except Exception as exc:  # input from the broker: whatever it holds, the worker serves
            self.refused += 1
            why = f"{type(exc).__name__}: {exc}"[:300]
            log.warning("worker: refused home grammar %s: %s", message.digest[:12], why)
            with self._lock:
                self._building.discard(message.digest)
                self._failed[message.digest] = why
                while len(self._failed) > FAILURES_KEPT:
                    self._failed.popitem(last=False)
            return
        with self._lock:
            self._building.discard(message.digest)
            self._built[message.digest] = grammar
            while len(self._built) > self.kept:
                self._built.popitem(last=False)
            self._latest[topic] = message.digest
            self._latest.move_to_end(topic)
            while len(self._latest) > SOURCES_KEPT:
                self._latest.popitem(last=False)
        log.info(
            "worker: home grammar %s (%s) ready in %.1f s",
            message.digest[:12],
            message.language,
            time.monotonic() - started,
        )
