"""The home: floors, areas and entities from a YAML file shaped like Home Assistant's fixtures.

```yaml
floors:   [{name: Ground Floor, id: ground_floor}]
areas:    [{name: Kitchen, id: kitchen, floor: ground_floor, aliases: [cooking area]}]
entities: [{name: Kitchen Light, id: light.kitchen, area: kitchen, state: "off",
            attributes: {device_class: ...}, aliases: [...]}]
```

A name may be a hassil template (``Trader Joe[']s``): each spelling it allows is a name.
From the home come the slot lists the templates refer to: ``name`` (with the entity's
domain and attributes as match context, as Home Assistant does), ``area`` and ``floor``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hassil import SlotList, TextSlotList, is_template, parse_sentence, sample_expression


class HomeError(ValueError):
    """A home file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Floor:
    id: str
    name: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Area:
    id: str
    name: str
    floor_id: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Entity:
    """One entity: what it is called, where it is and its state (for answers)."""

    id: str
    name: str
    area_id: str | None = None
    state: str = ""
    human_state: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    aliases: tuple[str, ...] = ()

    @property
    def domain(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def state_with_unit(self) -> str:
        unit = self.attributes.get("unit_of_measurement")
        shown = self.human_state if self.human_state is not None else self.state
        return f"{shown} {unit}" if unit else shown

    def match_context(self) -> dict[str, Any]:
        """What a template's ``requires_context`` may check when this entity is named."""
        return {"domain": self.domain, **self.attributes}


@dataclass
class Home:
    floors: list[Floor] = field(default_factory=list)
    areas: list[Area] = field(default_factory=list)
    entities: list[Entity] = field(default_factory=list)
    source: str = "(empty home)"

    def slot_lists(self) -> dict[str, SlotList]:
        """The ``name``, ``area`` and ``floor`` lists for hassil."""
        names: list[tuple[str, str, dict[str, Any]]] = []
        for entity in self.entities:
            context = entity.match_context()
            names.extend((name, name, context) for name in entity.names)
        return {
            "name": TextSlotList.from_tuples(names, allow_template=False, name="name"),
            "area": TextSlotList.from_strings(
                _all_names(self.areas), allow_template=False, name="area"
            ),
            "floor": TextSlotList.from_strings(
                _all_names(self.floors), allow_template=False, name="floor"
            ),
        }

    def area_by_name(self, name: str) -> Area | None:
        wanted = _fold(name)
        return next((a for a in self.areas if wanted in map(_fold, (a.name, *a.aliases))), None)

    def floor_by_name(self, name: str) -> Floor | None:
        wanted = _fold(name)
        return next((f for f in self.floors if wanted in map(_fold, (f.name, *f.aliases))), None)

    def area(self, area_id: str | None) -> Area | None:
        return next((a for a in self.areas if a.id == area_id), None)

    def entity(self, entity_id: str) -> Entity | None:
        return next((e for e in self.entities if e.id == entity_id), None)

    def match(self, slots: dict[str, Any]) -> list[Entity]:
        """Entities an intent's slots point at (name, area, floor, domain, device_class)."""
        tests = self._tests(slots)
        if tests is None:
            return []
        return [entity for entity in self.entities if all(test(entity) for test in tests)]

    def _tests(self, slots: dict[str, Any]) -> list[Callable[[Entity], bool]] | None:
        """What an entity must be for ``slots`` (None: an area or floor this home lacks)."""
        area = self.area_by_name(str(slots["area"])) if slots.get("area") else None
        floor = self.floor_by_name(str(slots["floor"])) if slots.get("floor") else None
        if (slots.get("area") and area is None) or (slots.get("floor") and floor is None):
            return None
        tests: list[Callable[[Entity], bool]] = []
        names = _names_asked(slots)
        if names is not None:
            tests.append(lambda e: bool(names & {_fold(n) for n in e.names}))
        if area is not None:
            tests.append(lambda e: e.area_id == area.id)
        if floor is not None:
            tests.append(lambda e: self._on_floor(e, floor))
        if domains := _as_set(slots.get("domain")):
            tests.append(lambda e: e.domain in domains)
        if classes := _as_set(slots.get("device_class")):
            tests.append(lambda e: e.attributes.get("device_class") in classes)
        return tests

    def _on_floor(self, entity: Entity, floor: Floor) -> bool:
        """Whether ``entity``'s area is on ``floor``."""
        entity_area = self.area(entity.area_id)
        return entity_area is not None and entity_area.floor_id == floor.id


def load_home(path: str | Path) -> Home:
    """Read a home file; raise HomeError naming the file and the entry that is wrong."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise HomeError(
            f"home file {path} not found: create it (see config/home.yaml) or set "
            "[stages.intent.hassil] home to its path"
        ) from None
    except yaml.YAMLError as exc:
        raise HomeError(f"home file {path} is not valid YAML: {exc}") from None
    return home_from_dict(data, source=str(path))


def home_from_dict(data: dict[str, Any], source: str = "(dict)") -> Home:
    if not isinstance(data, dict):
        raise HomeError(f"{source}: expected a mapping with floors/areas/entities")
    floors = [
        Floor(str(_need(f, "id", source, "floors", i)), *_names(f, source, "floors", i))
        for i, f in enumerate(data.get("floors") or [])
    ]
    areas = [_area(raw, source, i) for i, raw in enumerate(data.get("areas") or [])]
    entities = [_entity(raw, source, i) for i, raw in enumerate(data.get("entities") or [])]
    _check_references(floors, areas, entities, source)
    return Home(floors, areas, entities, source)


def _names_asked(slots: dict[str, Any]) -> set[str] | None:
    """The folded names an intent's ``name`` slot asks for (None: any name)."""
    name = slots.get("name")
    if not name or name == "all":  # "turn off all the fans": Home Assistant ignores this name
        return None
    return {_fold(n) for n in (name if isinstance(name, list) else [name])}


def _check_references(
    floors: list[Floor], areas: list[Area], entities: list[Entity], source: str
) -> None:
    """Every floor an area names and every area an entity names is in the home."""
    known_floors = {f.id for f in floors}
    for a in areas:
        if a.floor_id and a.floor_id not in known_floors:
            raise HomeError(f"{source}: area {a.name!r} names unknown floor {a.floor_id!r}")
    known_areas = {a.id for a in areas}
    for e in entities:
        if e.area_id and e.area_id not in known_areas:
            raise HomeError(f"{source}: entity {e.id!r} names unknown area {e.area_id!r}")


def _area(raw: Any, source: str, index: int) -> Area:
    """One ``areas`` entry of a home file."""
    name, aliases = _names(raw, source, "areas", index)
    floor = raw.get("floor")
    area_id = str(_need(raw, "id", source, "areas", index))
    return Area(area_id, name, str(floor) if floor else None, aliases)


def _entity(raw: Any, source: str, index: int) -> Entity:
    """One ``entities`` entry of a home file."""
    entity_id = str(_need(raw, "id", source, "entities", index))
    if "." not in entity_id:
        raise HomeError(f"{source}: entities[{index}].id {entity_id!r} must be domain.object_id")
    name, aliases = _names(raw, source, "entities", index)
    state = raw.get("state", "")
    human = None
    if isinstance(state, dict):  # {in: what people say, out: Home Assistant's state}
        human, state = str(state.get("in", "")), str(state.get("out", ""))
    area = raw.get("area")
    attributes = dict(raw.get("attributes") or {})
    return Entity(
        entity_id, name, str(area) if area else None, str(state), human, attributes, aliases
    )


def _names(raw: Any, source: str, section: str, index: int) -> tuple[str, tuple[str, ...]]:
    """The first spelling is the name; other spellings and ``aliases`` are aliases."""
    spelled = _spellings(str(_need(raw, "name", source, section, index)))
    for alias in raw.get("aliases") or []:
        spelled.extend(s for s in _spellings(str(alias)) if s not in spelled)
    return spelled[0], tuple(spelled[1:])


def _spellings(name: str) -> list[str]:
    if not is_template(name):
        return [name.strip()]
    out: list[str] = []
    for text in sample_expression(parse_sentence(name).expression):
        if text.strip() and text.strip() not in out:
            out.append(text.strip())
    return out


def _need(raw: Any, key: str, source: str, section: str, index: int) -> Any:
    if not isinstance(raw, dict) or raw.get(key) in (None, ""):
        raise HomeError(f"{source}: {section}[{index}] needs a {key!r}")
    return raw[key]


def _all_names(items: Iterable[Area | Floor]) -> list[str]:
    return [n for item in items for n in (item.name, *item.aliases)]


def _as_set(value: Any) -> set[str]:
    if value in (None, ""):
        return set()
    return {str(v) for v in value} if isinstance(value, list) else {str(value)}


def _fold(text: str) -> str:
    return " ".join(str(text).casefold().split())
