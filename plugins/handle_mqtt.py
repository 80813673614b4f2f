"""``mqtt-actions``: act on Home Assistant-style intents by publishing MQTT commands.

Entities (lights, switches) and whole intents are mapped to command topics in the config.
An intent this handler does not act on is published on ``<prefix>/<site>/intent/<Name>``
for Home Assistant automations and Node-RED, and left to the next handler (returns None).
Publishing goes through the running ``mqtt`` service (its queue survives broker loss).
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from voiced.api.app import RunContext
from voiced.api.hooks import hookimpl
from voiced.api.intents import Intent, Response

log = logging.getLogger(__name__)

TURN = {"HassTurnOn": True, "HassTurnOff": False}
LIGHT_SET = "HassLightSet"


class EntityAction(BaseModel):
    """One controllable thing: ``[[stages.handler.mqtt-actions.entities]]``."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="entity id, e.g. light.kitchen")
    names: list[str] = Field(default_factory=list, description="spoken names besides the id")
    area: str | None = None
    command_topic: str
    payload_on: str = "ON"
    payload_off: str = "OFF"
    brightness_topic: str | None = None
    brightness_scale: int = Field(255, ge=1, description="payload value for 100 %")
    retain: bool = False

    def all_names(self) -> set[str]:
        object_id = self.id.split(".", 1)[-1]
        return {_norm(n) for n in (self.id, object_id, object_id.replace("_", " "), *self.names)}


class IntentAction(BaseModel):
    """A whole intent mapped to a topic: ``[[stages.handler.mqtt-actions.intents]]``.

    ``payload`` and ``speech`` are ``str.format`` templates over the intent's slots.
    """

    model_config = ConfigDict(extra="forbid")

    intent: str
    topic: str
    payload: str = ""
    speech: str = ""
    retain: bool = False


class MqttActionsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    service: str = Field("mqtt", description="name of the mqtt service stage to publish with")
    entities: list[EntityAction] = Field(default_factory=list)
    intents: list[IntentAction] = Field(default_factory=list)
    publish_unhandled: bool = Field(True, description="publish other intents for automations")
    speech_on: str = "Turned on {name}"
    speech_off: str = "Turned off {name}"
    speech_brightness: str = "Set {name} to {brightness} percent"


class MqttActions:
    """Handler stage: publishes on the mqtt service; no model, nothing to load."""

    def __init__(self, options: MqttActionsOptions | None = None, app: Any = None) -> None:
        self.options = options or MqttActionsOptions()
        self.app = app

    def load(self) -> None:
        pass

    def close(self) -> None:
        pass

    @hookimpl
    def voiced_handle(self, intent: Intent, context: RunContext) -> Response | None:
        service = self._service(context)
        offline = getattr(context.app or self.app, "services_offline", None)
        if service is None and offline:
            log.info("mqtt-actions: %s; nothing published to MQTT", offline)
            return None
        if service is None:
            log.error(
                "mqtt-actions: no running %r service stage; add it to pipeline.service",
                self.options.service,
            )
            return None
        for action in self.options.intents:
            if action.intent == intent.name:
                return self._intent_action(service, action, intent)
        if intent.name in TURN or intent.name == LIGHT_SET:
            response = self._entity_action(service, intent)
            if response is not None:
                return response
        if self.options.publish_unhandled:
            topic = service.topics.intent(context.site_id, intent.name)
            service.publish(
                topic, {**intent.to_dict(), "site_id": context.site_id, "run_id": context.run_id}
            )
        return None

    def _service(self, context: RunContext) -> Any:
        app = context.app or self.app
        return app.stage("service", self.options.service) if app is not None else None

    def _intent_action(self, service: Any, action: IntentAction, intent: Intent) -> Response:
        values = _SlotValues(intent.slots)
        payload = action.payload.format_map(values)
        service.publish(action.topic, payload, retain=action.retain)
        return Response(
            speech=action.speech.format_map(values),
            handler="mqtt-actions",
            data={"acted": True, "topics": [action.topic]},
        )

    def _entity_action(self, service: Any, intent: Intent) -> Response | None:
        targets = self.match(intent)
        if not targets:
            return None
        published: list[str] = []
        if intent.name in TURN:
            on = TURN[intent.name]
            for entity in targets:
                payload = entity.payload_on if on else entity.payload_off
                service.publish(entity.command_topic, payload, retain=entity.retain)
                published.append(entity.command_topic)
            template = self.options.speech_on if on else self.options.speech_off
            speech = template.format(name=_spoken(intent, targets))
        else:
            brightness = _percent(intent.slots.get("brightness"))
            dimmable = [e for e in targets if e.brightness_topic]
            if brightness is None or not dimmable:
                return None
            for entity in dimmable:
                value = round(brightness * entity.brightness_scale / 100)
                service.publish(entity.brightness_topic, str(value), retain=entity.retain)
                published.append(entity.brightness_topic)
            speech = self.options.speech_brightness.format(
                name=_spoken(intent, dimmable), brightness=brightness
            )
            targets = dimmable
        return Response(
            speech=speech,
            handler="mqtt-actions",
            data={"acted": True, "entities": [e.id for e in targets], "topics": published},
        )

    def match(self, intent: Intent) -> list[EntityAction]:
        """Configured entities the intent is about: the recognizer's matched ids first,
        else the ``name`` slot (id, object id or a configured name), else the ``area``."""
        entities = self.options.entities
        matched_ids = (intent.data or {}).get("entities") or []
        if matched_ids:
            found = [e for e in entities if e.id in matched_ids]
            if found:
                return found
        name = _slot_text(intent.slots.get("name"))
        area = _slot_text(intent.slots.get("area"))
        if name:
            return _named(entities, name, area)
        if area:
            return _in_area(entities, area, _slot_text(intent.slots.get("domain")))
        return []


def _named(entities: list[EntityAction], name: str, area: str) -> list[EntityAction]:
    """The entities called ``name`` (id, object id or a configured name), in ``area`` if
    given (an entity with no area is in every area)."""
    found = [e for e in entities if _norm(name) in e.all_names()]
    if area:
        found = [e for e in found if e.area is None or _norm(e.area) == _norm(area)]
    return found


def _in_area(entities: list[EntityAction], area: str, domain: str) -> list[EntityAction]:
    """The entities in ``area``, of ``domain`` if given."""
    return [
        e for e in entities
        if e.area and _norm(e.area) == _norm(area)
        and (not domain or e.id.startswith(f"{domain}."))
    ]  # fmt: skip


class _SlotValues(dict):
    """Slots for ``str.format_map``; a missing slot formats as an empty string."""

    def __init__(self, slots: dict[str, Any]) -> None:
        super().__init__({k: _slot_text(v) for k, v in slots.items()})

    def __missing__(self, key: str) -> str:
        return ""


def _slot_text(value: Any) -> str:
    if isinstance(value, dict):
        value = value.get("value", value.get("text"))
    return "" if value is None else str(value)


def _percent(value: Any) -> int | None:
    text = _slot_text(value).strip().rstrip("%")
    try:
        number = round(float(text))
    except ValueError:
        return None
    return max(0, min(100, number))


def _spoken(intent: Intent, targets: list[EntityAction]) -> str:
    name = _slot_text(intent.slots.get("name")) or _slot_text(intent.slots.get("area"))
    return name or ", ".join(t.names[0] if t.names else t.id for t in targets)


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("_", " ").split())


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "handler",
        "mqtt-actions",
        MqttActions,
        options=MqttActionsOptions,
        description="turn on/off and dim mapped entities over MQTT; publish other intents",
    )
