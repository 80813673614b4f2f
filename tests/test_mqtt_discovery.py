"""Home Assistant device discovery: payload shape per component, re-announce, forget."""

from __future__ import annotations

import argparse
import json

import pytest
from mqtt_fixtures import eventually
from voiced_plugins.mqtt import MqttOptions, MqttService
from voiced_plugins.mqtt.forget import forget

# What HA's MQTT platforms require (home-assistant.io/integrations/<platform>.mqtt):
REQUIRED = {
    "sensor": {"p", "unique_id", "state_topic"},
    "switch": {"p", "unique_id", "command_topic"},
    "button": {"p", "unique_id", "command_topic"},
    "text": {"p", "unique_id", "command_topic"},
}
ALLOWED = {
    "sensor": {
        "name",
        "device_class",
        "options",
        "icon",
        "value_template",
        "json_attributes_topic",
    },
    "switch": {"name", "state_topic", "payload_on", "payload_off", "icon"},
    "button": {"name", "payload_press", "icon"},
    "text": {"name", "state_topic", "mode", "min", "max", "icon"},
}


@pytest.fixture
async def announced(mosquitto, assistant, mqtt_recorder):
    recorder = mqtt_recorder("homeassistant/#")
    svc = MqttService(MqttOptions(url=mosquitto.url, site_id="kitchen"), assistant)
    assistant.observers.append(svc)  # it hears the daemon's events, as in voiced run
    await svc.start()
    raw = await recorder.first("homeassistant/device/voiced_kitchen/config")
    yield svc, json.loads(raw), recorder
    await svc.stop()


async def test_one_retained_device_config_holds_device_origin_and_availability(
    announced, mqtt_recorder
):
    _, config, _ = announced
    assert config["dev"]["ids"] == ["voiced_kitchen"]
    assert config["dev"]["name"] == "voiced kitchen"
    assert config["o"]["name"] == "voiced" and config["o"]["sw"]
    assert config["availability_topic"] == "voiced/status"
    assert (config["payload_available"], config["payload_not_available"]) == ("online", "offline")
    late = mqtt_recorder("homeassistant/device/+/config")
    assert json.loads(await late.first("homeassistant/device/voiced_kitchen/config")) == config


@pytest.mark.parametrize(
    ("component", "platform"),
    [
        ("state", "sensor"),
        ("transcript", "sensor"),
        ("intent", "sensor"),
        ("response", "sensor"),
        ("mute", "switch"),
        ("listen", "button"),
        ("say", "text"),
        ("speaker", "sensor"),
        ("enroll", "text"),
    ],
)
async def test_each_component_has_the_keys_its_platform_requires(announced, component, platform):
    _, config, _ = announced
    entity = config["cmps"][component]
    assert entity["p"] == platform
    assert REQUIRED[platform] <= entity.keys()
    assert entity.keys() - REQUIRED[platform] <= ALLOWED[platform]
    assert entity["unique_id"] == f"voiced_kitchen_{component}"


async def test_entities_point_at_the_topics_the_service_uses(announced):
    _, config, _ = announced
    cmps = config["cmps"]
    assert cmps["state"]["state_topic"] == "voiced/kitchen/state"
    assert set(cmps["state"]["options"]) == {"idle", "listening", "thinking", "speaking"}
    assert cmps["transcript"]["state_topic"] == "voiced/kitchen/transcript"
    assert cmps["intent"]["json_attributes_topic"] == "voiced/kitchen/intent"
    assert cmps["mute"]["command_topic"] == "voiced/kitchen/command/mute"
    assert cmps["mute"]["state_topic"] == "voiced/kitchen/muted"
    assert cmps["listen"]["command_topic"] == "voiced/kitchen/command/listen"
    assert cmps["say"]["command_topic"] == "voiced/kitchen/command/say"
    assert cmps["speaker"]["state_topic"] == "voiced/kitchen/speaker"
    assert cmps["enroll"]["command_topic"] == "voiced/kitchen/command/enroll"
    assert len({c["unique_id"] for c in cmps.values()}) == len(cmps)


async def test_what_home_assistant_sends_to_the_entities_works(announced, assistant, mqtt_recorder):
    _, config, _ = announced
    cmps = config["cmps"]
    ha = mqtt_recorder("nothing/here")
    ha.client.publish(cmps["say"]["command_topic"], "dinner is ready", qos=1)
    ha.client.publish(cmps["listen"]["command_topic"], cmps["listen"]["payload_press"], qos=1)
    ha.client.publish(cmps["mute"]["command_topic"], cmps["mute"]["payload_on"], qos=1)
    await eventually(lambda: len(assistant.calls) == 3)
    assert assistant.calls == [
        ("say", "dinner is ready", "kitchen"),
        ("listen", "kitchen"),
        ("mute", True, "kitchen"),
    ]
    muted = mqtt_recorder(cmps["mute"]["state_topic"])
    assert await muted.first(cmps["mute"]["state_topic"]) == b"ON"


async def test_home_assistant_coming_online_gets_the_device_announced_again(
    announced, mqtt_recorder
):
    _, _, recorder = announced
    topic = "homeassistant/device/voiced_kitchen/config"
    ha = mqtt_recorder("nothing/here")
    ha.client.publish("homeassistant/status", "online", qos=1)
    await recorder.until(lambda ms: [t for t, _, _ in ms].count(topic) >= 2)


async def test_forget_removes_the_device_with_an_empty_retained_config(
    announced, mosquitto, mqtt_recorder
):
    svc, _, _ = announced
    await svc.stop()
    topic = forget(MqttOptions(url=mosquitto.url, site_id="kitchen"), "default")
    assert topic == "homeassistant/device/voiced_kitchen/config"
    late = mqtt_recorder("homeassistant/#", "probe/done")
    late.client.publish("probe/done", "x", qos=1)
    await late.first("probe/done")  # retained messages would have come before it
    assert not [t for t, _, _ in late.messages if t.startswith("homeassistant/")]


async def test_the_forget_command_reads_the_config_file(mosquitto, tmp_path, mqtt_recorder, capsys):
    from voiced_plugins.mqtt import forget as forget_module

    config = tmp_path / "voiced.toml"
    config.write_text(f'site_id = "hall"\n[stages.service.mqtt]\nurl = "{mosquitto.url}"\n')
    pub = mqtt_recorder("nothing/here")
    pub.client.publish(
        "homeassistant/device/voiced_hall/config", "{}", retain=True, qos=1
    ).wait_for_publish(5)
    parser = argparse.ArgumentParser()
    forget_module.configure_parser(parser)
    assert forget_module.run(parser.parse_args(["--config", str(config)])) == 0
    assert "homeassistant/device/voiced_hall/config" in capsys.readouterr().out
    late = mqtt_recorder("homeassistant/#", "probe/done")
    late.client.publish("probe/done", "x", qos=1)
    await late.first("probe/done")
    assert late.payloads("homeassistant/device/voiced_hall/config") == []


async def test_enrolling_from_home_assistant_asks_the_daemon_and_the_last_speaker_is_retained(
    announced, assistant, mqtt_recorder
):
    from voiced.api.events import IntentRefused, Transcript

    _, config, _ = announced
    cmps = config["cmps"]
    ha = mqtt_recorder("voiced/kitchen/event/error")
    ha.client.publish(cmps["enroll"]["command_topic"], "Alice", qos=1)
    ha.client.publish("voiced/kitchen/command/forget-speaker", '{"name": "bob"}', qos=1)
    await eventually(lambda: len(assistant.calls) == 2)
    assert assistant.calls == [("enroll", "Alice", "kitchen"), ("forget-speaker", "bob")]
    heard = Transcript(
        text="unlock the front door", engine="x", language="en", audio_seconds=1.0,
        latency_s=0.1, asr_seconds=0.1, rtf=0.1, no_speech=False, speaker="alice",
        speaker_score=0.2,
    )  # fmt: skip
    assistant.emit(heard.event("r1", "kitchen"))
    last = mqtt_recorder(cmps["speaker"]["state_topic"])
    assert await last.first(cmps["speaker"]["state_topic"]) == b"alice"
    error = json.loads(await ha.first("voiced/kitchen/event/error"))
    assert "nobody called 'bob' is enrolled" in error["data"]["message"]
    refusal = IntentRefused(
        name="HassTurnOff", text="unlock the front door", speaker="unknown", speaker_score=None,
        rule="entity=lock.front_door", allow=["alice"], speech="Sorry, not you.",
    )  # fmt: skip
    assistant.emit(refusal.event("r2", "kitchen"))
    answer = mqtt_recorder("voiced/kitchen/response")
    await answer.until(lambda ms: any(p == b"Sorry, not you." for _, p, _ in ms))
