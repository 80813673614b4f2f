"""The front end's side of the home travelling: its home grammar published for the workers.

For each language a job is sent in, the app's intent stage (its grammar of that language) is
made into a ``GrammarMessage`` (intent_hassil.portable) and published retained, QoS 1, on
``<prefix>/grammar/<front>/<language>``; the job names its digest. It is made again only when
the stage's home or sentences change (a Home Assistant refresh), ~20 ms; an intent stage that
cannot be carried (not hassil) sends none, and the workers transcribe without a home.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from voiced.api.recognition import home_grammar

from .wire import GrammarMessage, Topics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class _Published:
    grammar: Any
    home: Any
    intents: Any
    digest: str | None
    topic: str = ""
    payload: bytes = b""


class HomePublisher:
    """The digest of the home grammar a job of ``language`` names, published when new."""

    def __init__(
        self, app: Any, publish: Any, topics: Topics, front_id: str, max_bytes: int
    ) -> None:
        self.app = app
        self.publish = publish  # (topic, payload, qos, retain) -> Any
        self.topics = topics
        self.front_id = front_id
        self.max_bytes = max_bytes
        self._published: dict[str, _Published] = {}
        self._lock = threading.Lock()
        self.messages = 0

    def digest(self, language: str | None) -> str | None:
        """The digest of the app's home grammar of ``language`` (None: it has none to carry)."""
        stage = getattr(self.app, "stage", None)
        grammar = home_grammar(stage("intent") if callable(stage) else None, language)
        if grammar is None or getattr(grammar, "intents", None) is None:
            return None
        key = language or getattr(grammar, "language", "")
        with self._lock:
            known = self._published.get(key)
            if known is not None and _same(known, grammar):
                return known.digest
            self._published[key] = self._publish(key, grammar)
            return self._published[key].digest

    def republish(self) -> None:
        """Publish every grammar again (on each connection: a broker restart may have lost
        the retained ones, or they were made while it was away)."""
        with self._lock:
            known = [p for p in self._published.values() if p.payload]
        for published in known:
            self.publish(published.topic, published.payload, 1, True)

    def _publish(self, key: str, grammar: Any) -> _Published:
        home, intents = getattr(grammar, "home", None), getattr(grammar, "intents", None)
        made = self._made(key, grammar)
        if made is None:
            return _Published(grammar, home, intents, None)
        digest, payload = made
        topic = self.topics.grammar(self.front_id, key)
        self.publish(topic, payload, 1, True)  # paho sends it once connected; so does republish
        self.messages += 1
        log.info(
            "ASR pool: home grammar %s (%s, %d bytes) published for the workers",
            digest[:12],
            key,
            len(payload),
        )
        return _Published(grammar, home, intents, digest, topic, payload)

    def _made(self, key: str, grammar: Any) -> tuple[str, bytes] | None:
        try:
            from voiced_plugins.intent_hassil.portable import grammar_data
        except ImportError:
            return None
        try:
            data = grammar_data(grammar)
        except Exception as exc:  # not hassil's (or a custom file gone): no home travels
            log.warning("ASR pool: the home grammar cannot be sent to the workers: %s", exc)
            return None
        message = GrammarMessage.of(data, getattr(grammar, "language", key))
        payload = message.encode()
        if len(payload) > self.max_bytes:
            log.warning(
                "ASR pool: the home grammar is %d bytes, over max_grammar_bytes (%d): the "
                "workers transcribe without the home",
                len(payload),
                self.max_bytes,
            )
            return None
        return message.digest, payload


def _same(known: _Published, grammar: Any) -> bool:
    return (
        known.grammar is grammar
        and known.home is getattr(grammar, "home", None)
        and known.intents is getattr(grammar, "intents", None)
    )
