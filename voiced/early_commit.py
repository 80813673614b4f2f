"""When a speculative transcript may end an utterance early: the one rule, in one place.

A transcript made during a pause may be acted on before the usual 0.7 s of silence only when
it is a *complete, confident command for this home*:

- a strict match (no fuzzy name snapping, confidence 1) by a template recognizer named in
  ``vad.early_commit_recognizers`` (free speech, the LLM, chatter wait for the normal end);
- naming what it acts on: an intent that targets devices must name the device (``name``), or
  both a place (area, floor) and a kind (domain, device class). "Turn off the kitchen" (a
  place alone) is exactly what the first half of "turn off the kitchen … lights and the fan"
  sounds like, and "turn off the lights" (a kind alone) the first half of "turn off the
  lights … in the bedroom": both wait. A place taken from the site's area (not said) is no
  place here;
- not ending on a word that announces more ("and", "then", "for", …) or on a comma/ellipsis
  (Whisper writes those for speech that trails off).

Some intents name their kind themselves: "what is the temperature in the bedroom" asks a
thermostat (``IMPLIED_KIND``), so a place is enough for them.

Anything else waits for the normal endpoint. There, if the utterance ended in the very pause
that was transcribed (nothing but silence after it), a strict match of that pass is the normal
transcript (:func:`strict_match`): it is answered without transcribing the audio again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from voiced.intents import Intent

PLACE_SLOTS = ("area", "floor")
KIND_SLOTS = ("domain", "device_class")
DANGLING = frozenset(
    {"and", "or", "then", "but", "also", "plus", "to", "for", "the", "a", "an", "of", "in"}
    | {"on", "at", "by", "with", "from", "until"}
)
# Intents whose target kind is the intent's own: a place (or a name) completes them; without
# one they wait, as "turn off the lights" does ("what is the temperature … upstairs").
IMPLIED_KIND = {
    "HassClimateGetTemperature": "climate",
    "HassClimateSetTemperature": "climate",
    "HassLightSet": "light",
}
_TRAILS_OFF = re.compile(r"(,|\.\.\.|…|-)\s*$")
_WORDS = re.compile(r"[\w']+")


def complete_command(intent: Intent | None, text: str, recognizers: Iterable[str]) -> bool:
    """Whether ``intent`` (recognized from ``text`` heard so far) may be acted on now."""
    return why_not(intent, text, recognizers) is None


def why_not(intent: Intent | None, text: str, recognizers: Iterable[str]) -> str | None:
    """Why ``intent`` (from ``text`` heard so far) may not be acted on now; None: it may."""
    if intent is None:
        return "no intent"
    if intent.recognizer not in set(recognizers):
        return f"recognizer {intent.recognizer}"
    if not strict_match(intent):
        return "not strict"
    if not intent.slots.get("name"):
        place = any(_spoken(intent, slot) for slot in PLACE_SLOTS)
        kind = intent.name in IMPLIED_KIND or any(intent.slots.get(slot) for slot in KIND_SLOTS)
        if place and not kind:
            return "a place alone"  # a longer command may follow
        if kind and not place:
            return "a kind alone"
    words = _WORDS.findall(text.casefold())
    if not words:
        return "no words"
    if words[-1] in DANGLING:
        return f"ends on {words[-1]!r}"
    if _TRAILS_OFF.search(text):
        return "trails off"
    return None


def _spoken(intent: Intent, slot: str) -> bool:
    """The slot is filled by words heard, not by where the person is: with a site's area,
    "turn off the lights" gets the kitchen from the context and names no place at all."""
    if not intent.slots.get(slot):
        return False
    said = (intent.data.get("slot_text") or {}).get(slot)
    return said is None or bool(str(said).strip())


def strict_match(intent: Intent) -> bool:
    """Matched as said: no fuzzy name snapping, full confidence."""
    return intent.confidence >= 1.0 and not intent.data.get("fuzzy")
