"""The home-assistant plugin's parts that need no Home Assistant: registries -> home, what is
exposed, the cached home, connection options, and the Wyoming conversation reply.

Everything against a real Home Assistant is in test_home_assistant_real.py.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from voiced_plugins.home_assistant.home_source import HomeSourceOptions, cache_path, read_cache
from voiced_plugins.home_assistant.options import HomeAssistantConfigError, HomeAssistantConnection
from voiced_plugins.home_assistant.registry import home_from_registries, is_exposed
from voiced_plugins.intent_hassil.home import home_from_dict
from voiced_plugins.wyoming_server.conversation import transcript_reply
from wyoming.handle import Handled, NotHandled
from wyoming.intent import Intent as WyIntent

from voiced.intents import Intent, Response

_EMPTY = Path(__file__).parent / "empty.toml"
FLOORS = [{"floor_id": "ground", "name": "Ground Floor", "aliases": ["downstairs"]}]
AREAS = [
    {"area_id": "kitchen", "name": "Kitchen", "floor_id": "ground", "aliases": ["cookery"]},
    {"area_id": "den", "name": "Den (TV)", "floor_id": None, "aliases": []},
]
DEVICES = [{"id": "dev1", "area_id": "kitchen"}]
ENTRIES = [
    {"entity_id": "light.kitchen_lights", "device_id": "dev1", "area_id": None,
     "aliases": ["counter light"], "options": {}},
    {"entity_id": "switch.secret", "device_id": None, "area_id": "den", "aliases": [],
     "options": {"conversation": {"should_expose": False}}},
    {"entity_id": "sensor.cpu", "device_id": None, "area_id": None, "aliases": [],
     "options": {}, "entity_category": "diagnostic"},
]  # fmt: skip
STATES = [
    {"entity_id": "light.kitchen_lights", "state": "off",
     "attributes": {"friendly_name": "Kitchen Lights"}},
    {"entity_id": "switch.secret", "state": "on", "attributes": {"friendly_name": "Secret"}},
    {"entity_id": "sensor.cpu", "state": "3", "attributes": {"friendly_name": "CPU"}},
    {"entity_id": "sensor.outside", "state": "12",
     "attributes": {"friendly_name": "Outside Temperature", "device_class": "temperature",
                    "unit_of_measurement": "°C"}},
    {"entity_id": "automation.night", "state": "on", "attributes": {"friendly_name": "Night"}},
]  # fmt: skip


def test_the_home_has_the_exposed_entities_with_names_aliases_and_areas():
    home = home_from_registries(FLOORS, AREAS, DEVICES, ENTRIES, STATES, {})
    by_id = {e["id"]: e for e in home["entities"]}
    assert set(by_id) == {"light.kitchen_lights", "sensor.outside"}
    light = by_id["light.kitchen_lights"]
    assert light["name"] == "Kitchen Lights"
    assert light["aliases"] == ["counter light"]
    assert light["area"] == "kitchen"  # from its device
    assert by_id["sensor.outside"]["attributes"]["device_class"] == "temperature"
    assert home["floors"][0]["aliases"] == ["downstairs"]
    assert {a["name"] for a in home["areas"]} == {"Kitchen", "Den TV"}  # no template brackets
    parsed = home_from_dict(home)  # the recognizer takes it as it is
    assert parsed.match({"area": "cookery", "domain": "light"})[0].id == "light.kitchen_lights"


def test_the_users_expose_choice_wins_over_home_assistants_default():
    light = STATES[0]
    assert is_exposed("light.kitchen_lights", light, ENTRIES[0], {})
    hidden = {"light.kitchen_lights": {"conversation": False}}
    assert not is_exposed("light.kitchen_lights", light, ENTRIES[0], hidden)
    shown = {"automation.night": {"conversation": True}}
    assert is_exposed("automation.night", STATES[4], None, shown)
    assert not is_exposed("automation.night", STATES[4], None, {})


def test_the_cached_home_lives_in_the_state_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path))
    options = HomeSourceOptions(token="t")
    assert cache_path(options) == tmp_path / "home-assistant-home.json"
    assert read_cache(cache_path(options)) is None
    cache_path(options).write_text("{not json")
    assert read_cache(cache_path(options)) is None  # a broken cache is ignored, not fatal
    cache_path(options).write_text(json.dumps({"saved": 1.0, "home": {"entities": []}}))
    assert read_cache(cache_path(options))["home"] == {"entities": []}


def test_the_token_comes_from_the_option_a_file_or_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("HOME_ASSISTANT_TOKEN", raising=False)
    with pytest.raises(HomeAssistantConfigError, match="token_file"):
        HomeAssistantConnection().access_token()
    token = tmp_path / "token"
    token.write_text("abc\n")
    assert HomeAssistantConnection(token_file=str(token)).access_token() == "abc"
    monkeypatch.setenv("HOME_ASSISTANT_TOKEN", "from-env")
    assert HomeAssistantConnection().access_token() == "from-env"
    with pytest.raises(HomeAssistantConfigError, match="empty"):
        token.write_text("")
        HomeAssistantConnection(token_file=str(token)).access_token()


def test_websocket_url_and_tls_follow_the_url():
    plain = HomeAssistantConnection(url="http://ha.lan:8123/")
    assert plain.websocket_url == "ws://ha.lan:8123/api/websocket"
    assert plain.ssl_context() is None
    secure = HomeAssistantConnection(url="https://ha.lan")
    assert secure.websocket_url == "wss://ha.lan/api/websocket"
    context = secure.ssl_context()
    assert context is not None and context.check_hostname  # verified, never skipped
    with pytest.raises(ValueError, match="http"):
        HomeAssistantConnection(url="ha.lan:8123")


TURN_ON = Intent("HassTurnOn", {"name": "Kitchen Lights"}, "turn on the kitchen lights")


def test_an_intent_nobody_in_voiced_acted_on_goes_back_for_the_asker_to_run():
    spoken = Response("Turned on the lights", "responses", data={"acted": False})
    event = transcript_reply(TURN_ON, spoken, "Sorry")
    assert WyIntent.is_type(event.type)
    intent = WyIntent.from_event(event)
    assert intent.name == "HassTurnOn"
    assert [(e.name, e.value) for e in intent.entities] == [("name", "Kitchen Lights")]
    assert intent.text == "Turned on the lights"  # what to say, not what was said


def test_what_voiced_did_itself_is_handled_and_nothing_recognized_is_not_handled():
    timer = Response("Timer set for 5 minutes", "builtin", data={"acted": True})
    event = transcript_reply(Intent("HassStartTimer", {"minutes": 5}), timer, "Sorry")
    assert Handled.is_type(event.type)
    assert Handled.from_event(event).text == "Timer set for 5 minutes"
    mqtt = Response("Turned on kitchen lights", "mqtt-actions", data={"acted": True})
    assert Handled.is_type(transcript_reply(TURN_ON, mqtt, "Sorry").type)
    left = Response("Turned on the lights", "home-assistant", data={"peer_executes_intents": True})
    assert WyIntent.from_event(transcript_reply(TURN_ON, left, "Sorry")).text == left.speech
    missed = transcript_reply(None, None, "Sorry, I didn't understand")
    assert NotHandled.is_type(missed.type)
    assert NotHandled.from_event(missed).text == "Sorry, I didn't understand"


CACHED_HOME = {
    "floors": [],
    "areas": [{"id": "pantry", "name": "Pantry", "floor": None, "aliases": []}],
    "entities": [{"id": "light.pantry", "name": "Pantry Lamp", "area": "pantry", "state": "off",
                  "attributes": {}, "aliases": []}],
}  # fmt: skip


@pytest.mark.slow
async def test_a_start_while_home_assistant_is_down_recognizes_the_cached_home(tmp_path):
    from mqtt_fixtures import free_port
    from pipeline_helpers import EventRecorder, overrides
    from voiced_plugins.home_assistant.doctor import home_assistant_checks

    from voiced.daemon import prepare
    from voiced.pipeline import Pipeline

    cache = tmp_path / "home.json"
    cache.write_text(json.dumps({"saved": 1.0, "home": CACHED_HOME}))
    down = {"url": f"http://127.0.0.1:{free_port()}", "token": "t", "cache": str(cache),
            "reconnect_seconds": 0.2}  # fmt: skip
    settings = overrides(
        pipeline={"source": [], "service": ["home-assistant"]},
        stages={"intent": {"hassil": {"home": "", "sentences": []}},
                "service": {"home-assistant": down}},
    )  # fmt: skip
    recorder = EventRecorder()
    config, host = prepare(_EMPTY, settings, [("rec", recorder)])
    pipeline = Pipeline(config, host)
    await pipeline.start()
    try:
        for _ in range(100):
            if recorder.of("error"):
                break
            await asyncio.sleep(0.05)
        intent = pipeline.stage("intent", "hassil").recognize("turn on the pantry lamp")
    finally:
        await pipeline.stop()
    home = recorder.of("home")[0].data
    assert home["source"] == "cache" and home["stale"] is True and home["entities"] == 1
    error = recorder.of("error")[0].data
    assert error["stage"] == "home-assistant" and "unreachable" in error["message"]
    assert intent is not None and intent.name == "HassTurnOn"
    assert intent.slots["name"] == "Pantry Lamp"

    api, cached = home_assistant_checks(HomeSourceOptions(**down))
    assert api.ok is False and "unreachable" in api.detail
    assert cached.ok is True and "1 entities" in cached.detail
