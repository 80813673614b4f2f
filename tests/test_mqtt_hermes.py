"""Hermes (Rhasspy 2.5) topics, as an option."""

from __future__ import annotations

import json

import pytest
from mqtt_fixtures import eventually
from voiced_plugins.mqtt import MqttOptions, MqttService

from voiced import events as ev
from voiced.events import Event, EventType
from voiced.intents import Intent


@pytest.fixture
async def hermes_service(mosquitto, assistant):
    svc = MqttService(MqttOptions(url=mosquitto.url, hermes=True, site_id="den"), assistant)
    assistant.observers.append(svc)
    await svc.start()
    await eventually(lambda: svc.stats()["connected"])
    yield svc
    await svc.stop()


async def test_a_run_maps_to_the_hermes_topics_rhasspy_flows_expect(hermes_service, mqtt_recorder):
    recorder = mqtt_recorder("hermes/#")
    text = "set the den light to 50 percent"
    intent = Intent(
        "HassLightSet",
        {"name": "den light", "brightness": {"value": 50, "text": "50 percent"}},
        text=text,
        confidence=0.9,
    )
    for event in [
        ev.RunStart("wake").event("s1", "den"),
        ev.Wake("hey_jarvis", 0.8).event("s1", "den"),
        ev.Transcript(text, "whisper", "en", 2.25, 0.5, 0.3, 0.13, False).event("s1", "den"),
        ev.Intent(**intent.to_dict()).event("s1", "den"),
        ev.RunEnd("done").event("s1", "den"),
    ]:
        hermes_service.voiced_event(event)

    started = json.loads(await recorder.first("hermes/dialogueManager/sessionStarted"))
    assert (started["sessionId"], started["siteId"]) == ("s1", "den")
    hotword = json.loads(await recorder.first("hermes/hotword/hey_jarvis/detected"))
    assert hotword["modelId"] == "hey_jarvis" and hotword["siteId"] == "den"
    captured = json.loads(await recorder.first("hermes/asr/textCaptured"))
    assert captured["text"] == "set the den light to 50 percent"
    assert captured["seconds"] == 2.25 and captured["likelihood"] == 1.0
    assert (captured["siteId"], captured["sessionId"]) == ("den", "s1")
    nlu = json.loads(await recorder.first("hermes/nlu/intent/HassLightSet"))
    assert nlu["input"] == "set the den light to 50 percent"
    assert nlu["intent"] == {"intentName": "HassLightSet", "confidenceScore": 0.9}
    assert (nlu["siteId"], nlu["sessionId"]) == ("den", "s1")
    slots = {s["slotName"]: s for s in nlu["slots"]}
    assert slots["name"]["rawValue"] == "den light"
    assert slots["name"]["value"] == {"kind": "Unknown", "value": "den light"}
    assert slots["brightness"]["entity"] == "brightness"
    assert slots["brightness"]["rawValue"] == "50 percent"
    assert slots["brightness"]["value"] == {"kind": "Unknown", "value": 50}
    ended = json.loads(await recorder.first("hermes/dialogueManager/sessionEnded"))
    assert ended["termination"] == {"reason": "nominal"} and ended["sessionId"] == "s1"
    order = [t for t, _, _ in recorder.messages]
    assert (
        order.index("hermes/dialogueManager/sessionStarted")
        < order.index("hermes/asr/textCaptured")
        < order.index("hermes/dialogueManager/sessionEnded")
    )


async def test_not_recognized_is_published(hermes_service, mqtt_recorder):
    recorder = mqtt_recorder("hermes/nlu/#")
    hermes_service.voiced_event(ev.IntentNotRecognized("sing a song", []).event("s2", "den"))
    payload = json.loads(await recorder.first("hermes/nlu/intentNotRecognized"))
    assert payload["input"] == "sing a song" and payload["sessionId"] == "s2"


async def test_hermes_tts_say_speaks_through_the_daemon(hermes_service, assistant, mqtt_recorder):
    pub = mqtt_recorder("nothing/here")
    pub.client.publish("hermes/tts/say", json.dumps({"text": "hello", "siteId": "den"}), qos=1)
    pub.client.publish("hermes/tts/say", json.dumps({"text": "anywhere"}), qos=1)
    pub.client.publish("hermes/tts/say", "not json", qos=1)
    await eventually(lambda: len(assistant.calls) == 2 and assistant.errors())
    assert assistant.calls == [("say", "hello", "den"), ("say", "anywhere", "den")]
    assert "hermes/tts/say" in assistant.errors()[0].data["message"]


async def test_without_the_option_no_hermes_topic_is_used(mosquitto, assistant, mqtt_recorder):
    recorder = mqtt_recorder("hermes/#", "voiced/default/event/#")
    svc = MqttService(MqttOptions(url=mosquitto.url), assistant)
    await svc.start()
    svc.voiced_event(Event(EventType.TRANSCRIPT, "s1", data={"text": "hi"}))
    await recorder.first("voiced/default/event/transcript")
    assert not [t for t, _, _ in recorder.messages if t.startswith("hermes/")]
    await svc.stop()
