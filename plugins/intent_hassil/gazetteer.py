"""Home Assistant's fuzzy matcher behind the strict templates: ``gazetteer-matcher``.

It tags spans of the sentence against the home's entities, areas, floors and aliases (and
the command words) with Damerau-Levenshtein similarity, builds the frames an intent's slot
schema allows and rejects ties. Home Assistant runs it after its templates miss; so does the
hassil stage. On top of its own rules this wrapper accepts a reading only when it is one
command that explains every important word ("I left the lights on in the kitchen" is talk,
not a command) and its summed edit distance is small, so a near miss never becomes an action.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from voiced_plugins.intent_hassil.home import Home

log = logging.getLogger(__name__)

MAX_FUZZY_DISTANCE = 0.34
"""The most summed (1 - similarity) over a reading's fuzzy spans: one slipped word or two
close ones ("closer garage door" is 0.17)."""

LANGUAGES = frozenset(("en",))
"""Languages gazetteer-matcher ships a vocabulary for."""


@dataclass(frozen=True)
class Reading:
    """One command the matcher read: intent, slots by spoken name, and how sure it is."""

    intent: str
    slots: dict[str, Any]
    similarity: float
    fuzzy_words: int


@dataclass(frozen=True)
class Miss:
    reason: str


class HomeMatcher:
    """A ``GazetteerMatcher`` kept in step with the stage's home."""

    def __init__(self) -> None:
        from gazetteer_matcher import GazetteerMatcher

        self.matcher = GazetteerMatcher(home=_empty())  # reads its data files once (~3 s)
        self.home = Home()

    def use_home(self, home: Home) -> None:
        self.home = home
        self.matcher.set_home(gazetteer_home(home))

    def read(self, text: str, area: str | None = None) -> Reading | Miss:
        """The one command ``text`` asks for on this home, or why there is none."""
        try:
            found = self.matcher.interpret(text, context_area=self._known_area(area))
        except ValueError as exc:  # a context area the home lacks
            return Miss(f"gazetteer: {exc}")
        if not found.accepted:
            why = "tie between readings" if found.ambiguous else found.reason
            return Miss(f"gazetteer: {why or 'rejected'}")
        if len(found.frames) != 1:
            return Miss(f"gazetteer: {len(found.frames)} commands in one sentence")
        frame = found.frames[0]
        if frame.unexplained_important_tokens:
            words = " ".join(found.tokens[i].raw for i in frame.unexplained_important_tokens)
            return Miss(f"gazetteer: unexplained words {words!r}")
        if frame.fuzzy_distance > MAX_FUZZY_DISTANCE:
            return Miss(f"gazetteer: too far from the home's words ({frame.fuzzy_distance:.2f})")
        slots = {k: self._spoken(k, v) for k, v in frame.slots.items()}
        return Reading(frame.intent, slots, 1.0 - frame.fuzzy_distance, frame.fuzzy_count)

    def _spoken(self, slot: str, value: Any) -> Any:
        if isinstance(value, list):
            return [self._spoken(slot, v) for v in value]
        if slot in ("name", "area", "floor"):
            return self.matcher.display_name(slot, value)
        return value

    def _known_area(self, area: str | None) -> str | None:
        if area and self.home.area_by_name(area) is not None:
            return area
        return None


def gazetteer_home(home: Home) -> dict[str, Any]:
    """voiced's home in gazetteer-matcher's shape (collections keyed by id)."""
    entities: dict[str, Any] = {}
    for e in home.entities:
        spec: dict[str, Any] = {"name": e.name, "aliases": list(e.aliases), "domain": e.domain}
        if e.area_id:
            spec["area"] = e.area_id  # its floor comes from the area
        if e.attributes.get("device_class"):
            spec["device_class"] = str(e.attributes["device_class"])
        entities[e.id] = spec
    areas = {}
    for a in home.areas:
        areas[a.id] = {"name": a.name, "aliases": list(a.aliases)}
        if a.floor_id:
            areas[a.id]["floor"] = a.floor_id
    floors = {f.id: {"name": f.name, "aliases": list(f.aliases)} for f in home.floors}
    return {"areas": areas, "floors": floors, "entities": entities}


def _empty() -> dict[str, Any]:
    return {"areas": {}, "floors": {}, "entities": {}}
