"""The answer to a Wyoming ``transcript``: who acts, voiced or the asker (Home Assistant).

Home Assistant's Wyoming conversation agent sends every sentence as ``transcript``. It runs an
``intent`` reply (name + entities) on its own entities with its own intent handlers and
speaks the reply's ``text`` when its handler has nothing to say; a ``handled`` reply is only
spoken (the peer is assumed to have acted). So:

* ``handled``: a voiced handler took the intent itself (timers, time, never mind, MQTT
  actions, ...); ``text`` is voiced's answer.
* ``intent``: voiced recognized an intent nobody in voiced acted on (turning on lights, ...):
  the asker executes it; ``text`` is the answer to speak (Home Assistant's response template
  as voiced renders it), never the user's sentence.
* ``not-handled``: nothing was recognized.
"""

from __future__ import annotations

from typing import Any

from wyoming.event import Event as WyEvent
from wyoming.handle import Handled, NotHandled
from wyoming.intent import Entity
from wyoming.intent import Intent as WyIntent

from voiced.api.intents import Intent, Response

PEER_EXECUTES = "peer_executes_intents"
"""``context.data`` flag set for a Wyoming transcript: a handler that would forward the intent
to Home Assistant (the ``home-assistant`` handler) leaves it to the asker instead, answering
with the words only and this key true in its ``Response.data``."""

NOT_ACTING_HANDLERS = frozenset(("", "responses", "not-understood"))
"""Handlers that only put the intent's answer into words; they don't act on anything."""


def intent_event(intent: Intent, speech: str | None) -> WyEvent:
    """An ``intent`` event: name, slots as entities, and the text to speak (if any)."""
    entities = [Entity(name=k, value=_plain(v)) for k, v in intent.slots.items()]
    return WyIntent(name=intent.name, entities=entities, text=speech or None).event()


def transcript_reply(
    intent: Intent | None, response: Response | None, not_understood: str
) -> WyEvent:
    """``handled`` for what voiced did, ``intent`` for what the asker executes."""
    if intent is None:
        return NotHandled(text=not_understood).event()
    leaves_it = response is not None and response.data.get(PEER_EXECUTES)
    if response is not None and response.handler not in NOT_ACTING_HANDLERS and not leaves_it:
        return Handled(text=response.speech).event()
    # no handler at all (handler ""): voiced has nothing to say; the asker answers itself
    speech = response.speech if response is not None and response.handler else None
    return intent_event(intent, speech)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return value.get("value", value.get("text"))
    return value
