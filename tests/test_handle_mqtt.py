"""mqtt-actions: intents about mapped entities become MQTT commands; others go to automations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mqtt_fixtures import eventually
from voiced_plugins.handle_mqtt import MqttActions, MqttActionsOptions
from voiced_plugins.mqtt import MqttOptions, MqttService

from voiced.context import RunContext
from voiced.intents import Intent

HOME = Path(__file__).parent.parent / "config" / "home.yaml"

ENTITIES = [
    {
        "id": "light.kitchen",
        "names": ["kitchen light"],
        "area": "kitchen",
        "command_topic": "home/kitchen/light/set",
        "brightness_topic": "home/kitchen/light/bri",
    },
    {
        "id": "light.kitchen_counter",
        "names": ["counter lights"],
        "area": "kitchen",
        "command_topic": "home/kitchen/counter/set",
        "payload_on": "1",
        "payload_off": "0",
    },
    {
        "id": "switch.coffee_maker",
        "names": ["coffee maker"],
        "area": "kitchen",
        "command_topic": "home/kitchen/coffee/set",
    },
]


@pytest.fixture
async def actions(mosquitto, assistant):
    svc = MqttService(MqttOptions(url=mosquitto.url, discovery=False), assistant)
    assistant.stages[("service", "mqtt")] = svc
    await svc.start()
    await eventually(lambda: svc.stats()["connected"])
    handler = MqttActions(
        MqttActionsOptions(
            entities=ENTITIES,
            intents=[
                {
                    "intent": "HassShoppingListAddItem",
                    "topic": "home/shopping/add",
                    "payload": "{item}",
                    "speech": "Added {item}",
                }
            ],
        ),
        assistant,
    )
    handler.load()
    yield handler
    await svc.stop()


def context(assistant, site_id: str = "default") -> RunContext:
    return RunContext(site_id=site_id, app=assistant)


async def test_turn_on_a_named_entity_publishes_its_payload(actions, assistant, mqtt_recorder):
    recorder = mqtt_recorder("home/#")
    response = actions.voiced_handle(
        Intent("HassTurnOn", {"name": "Kitchen Light"}), context(assistant)
    )
    assert response.handler == "mqtt-actions"
    assert response.data["acted"] is True and response.data["entities"] == ["light.kitchen"]
    assert response.speech == "Turned on Kitchen Light"
    assert await recorder.first("home/kitchen/light/set") == b"ON"


async def test_turn_off_a_whole_area_uses_each_entitys_own_payload(
    actions, assistant, mqtt_recorder
):
    recorder = mqtt_recorder("home/#")
    response = actions.voiced_handle(
        Intent("HassTurnOff", {"area": "kitchen", "domain": "light"}), context(assistant)
    )
    assert response.data["entities"] == ["light.kitchen", "light.kitchen_counter"]
    assert await recorder.first("home/kitchen/light/set") == b"OFF"
    assert await recorder.first("home/kitchen/counter/set") == b"0"
    assert recorder.payloads("home/kitchen/coffee/set") == []


async def test_light_set_scales_the_brightness(actions, assistant, mqtt_recorder):
    recorder = mqtt_recorder("home/#")
    response = actions.voiced_handle(
        Intent("HassLightSet", {"name": "kitchen light", "brightness": 50}), context(assistant)
    )
    assert response.speech == "Set kitchen light to 50 percent"
    assert await recorder.first("home/kitchen/light/bri") == b"128"


async def test_the_hassil_recognizers_matched_entity_ids_are_used(
    actions, assistant, mqtt_recorder
):
    from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

    hassil = HassilIntent(HassilOptions(home=str(HOME), sentences=[]), None)
    hassil.load()
    intent = hassil.recognize("turn on the coffee maker")
    assert intent is not None and intent.data["entities"] == ["switch.coffee_maker"]
    recorder = mqtt_recorder("home/#")
    response = actions.voiced_handle(intent, context(assistant))
    assert response.data["entities"] == ["switch.coffee_maker"]
    assert await recorder.first("home/kitchen/coffee/set") == b"ON"


async def test_a_mapped_intent_publishes_its_templated_payload(actions, assistant, mqtt_recorder):
    recorder = mqtt_recorder("home/#")
    response = actions.voiced_handle(
        Intent("HassShoppingListAddItem", {"item": "milk"}), context(assistant)
    )
    assert response.speech == "Added milk"
    assert await recorder.first("home/shopping/add") == b"milk"


async def test_other_intents_go_to_automations_and_to_the_next_handler(
    actions, assistant, mqtt_recorder
):
    recorder = mqtt_recorder("voiced/+/intent/#", "home/#")
    unknown_light = Intent("HassTurnOn", {"name": "garage light"}, text="turn on garage light")
    assert actions.voiced_handle(unknown_light, context(assistant, "garage")) is None
    payload = json.loads(await recorder.first("voiced/garage/intent/HassTurnOn"))
    assert payload["name"] == "HassTurnOn" and payload["slots"] == {"name": "garage light"}
    assert payload["site_id"] == "garage"
    assert actions.voiced_handle(Intent("HassGetWeather"), context(assistant)) is None
    await recorder.first("voiced/default/intent/HassGetWeather")
    assert not [t for t, _, _ in recorder.messages if t.startswith("home/")]


async def test_without_the_mqtt_service_it_declines_with_a_log_line(assistant, caplog):
    handler = MqttActions(MqttActionsOptions(entities=ENTITIES), assistant)
    assert (
        handler.voiced_handle(Intent("HassTurnOn", {"name": "kitchen light"}), context(assistant))
        is None
    )
    assert "no running 'mqtt' service" in caplog.text
