"""Home Assistant's registries -> the home voiced recognizes (the home YAML's shape).

Only entities exposed to Assist are in it, named as Home Assistant's own agent names them:
the state's friendly name plus the entity registry's aliases; the area is the entity's own or
its device's. Floors and areas keep their aliases.
"""

from __future__ import annotations

import re
from typing import Any

# Home Assistant's default for entities nobody decided about
# (components/homeassistant/exposed_entities.py, DEFAULT_EXPOSED_DOMAINS).
DEFAULT_EXPOSED_DOMAINS = frozenset(
    ("climate", "cover", "fan", "humidifier", "light", "media_player", "scene", "switch",
     "todo", "vacuum", "water_heater")
)  # fmt: skip
DEFAULT_EXPOSED_BINARY_SENSOR_CLASSES = frozenset(
    ("door", "garage_door", "lock", "motion", "opening", "presence", "window")
)
DEFAULT_EXPOSED_SENSOR_CLASSES = frozenset(
    ("aqi", "co", "co2", "humidity", "pm10", "pm25", "temperature", "volatile_organic_compounds")
)
ASSISTANT = "conversation"  # Home Assistant's name for Assist in the expose settings
KEPT_ATTRIBUTES = ("device_class", "unit_of_measurement", "current_temperature", "temperature")
_TEMPLATE_CHARS = re.compile(r"[\[\]{}<>()|]")


def home_from_registries(
    floors: list[dict[str, Any]],
    areas: list[dict[str, Any]],
    devices: list[dict[str, Any]],
    entities: list[dict[str, Any]],
    states: list[dict[str, Any]],
    exposed: dict[str, dict[str, bool]],
) -> dict[str, Any]:
    """The home as ``home_from_dict`` reads it, from the WebSocket API's answers.

    ``entities`` are extended registry entries (``config/entity_registry/get_entries``: with
    aliases); ``exposed`` is ``homeassistant/expose_entity/list``'s ``exposed_entities``.
    """
    device_area = {d["id"]: d.get("area_id") for d in devices}
    registry = {e["entity_id"]: e for e in entities if e}
    known_areas = {a["area_id"] for a in areas}
    home_entities = [
        home_entity(state, registry.get(state["entity_id"]), device_area, known_areas)
        for state in states
        if is_exposed(state["entity_id"], state, registry.get(state["entity_id"]), exposed)
    ]
    known_floors = {f["floor_id"] for f in floors}
    return {
        "floors": [
            {"id": f["floor_id"], "name": _literal(f["name"]), "aliases": _aliases(f)}
            for f in floors
        ],
        "areas": [
            {
                "id": a["area_id"],
                "name": _literal(a["name"]),
                "floor": a.get("floor_id") if a.get("floor_id") in known_floors else None,
                "aliases": _aliases(a),
            }
            for a in areas
        ],
        "entities": sorted(home_entities, key=lambda e: e["id"]),
    }


def home_entity(
    state: dict[str, Any],
    entry: dict[str, Any] | None,
    device_area: dict[str, str | None],
    known_areas: set[str],
) -> dict[str, Any]:
    """One exposed entity of the home: its state, its registry entry and its device's area."""
    entity_id = state["entity_id"]
    attributes = state.get("attributes") or {}
    name = _literal(str(attributes.get("friendly_name") or entity_id.split(".", 1)[1]))
    area = None
    if entry is not None:
        area = entry.get("area_id") or device_area.get(entry.get("device_id"))
    aliases = [_literal(a) for a in (entry or {}).get("aliases") or [] if a]
    return {
        "id": entity_id,
        "name": name,
        "area": area if area in known_areas else None,
        "state": str(state.get("state", "")),
        "attributes": {k: attributes[k] for k in KEPT_ATTRIBUTES if k in attributes},
        "aliases": [a for a in aliases if a and a != name],
    }


def is_exposed(
    entity_id: str,
    state: dict[str, Any],
    entry: dict[str, Any] | None,
    exposed: dict[str, dict[str, bool]],
) -> bool:
    """Exposed to Assist: the user's choice when there is one, else Home Assistant's default."""
    choice = (exposed.get(entity_id) or {}).get(ASSISTANT)
    if choice is None and entry is not None:
        choice = ((entry.get("options") or {}).get(ASSISTANT) or {}).get("should_expose")
    if choice is not None:
        return bool(choice)
    if entry is not None and (entry.get("entity_category") or entry.get("hidden_by")):
        return False
    domain = entity_id.split(".", 1)[0]
    device_class = (state.get("attributes") or {}).get("device_class")
    if domain in DEFAULT_EXPOSED_DOMAINS:
        return True
    if domain == "binary_sensor":
        return device_class in DEFAULT_EXPOSED_BINARY_SENSOR_CLASSES
    if domain == "sensor":
        return device_class in DEFAULT_EXPOSED_SENSOR_CLASSES
    return False


def _aliases(item: dict[str, Any]) -> list[str]:
    return [_literal(a) for a in item.get("aliases") or [] if a and a != item.get("name")]


def _literal(name: str) -> str:
    """A name as plain words: brackets would make it a hassil template."""
    return " ".join(_TEMPLATE_CHARS.sub(" ", name).split())
