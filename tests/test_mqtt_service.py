"""The mqtt service against a real mosquitto: events out, state, commands in, availability."""

from __future__ import annotations

import json

import pytest
from mqtt_fixtures import eventually
from voiced_plugins.mqtt import MqttOptions, MqttService

from voiced import events as ev
from voiced.events import Event, EventType
from voiced.intents import Intent, Response


@pytest.fixture
async def service(mosquitto, assistant):
    svc = MqttService(
        MqttOptions(
            host="127.0.0.1", port=mosquitto.port, reconnect_min_delay=0.1, reconnect_max_delay=0.5
        ),
        assistant,
    )
    assistant.observers.append(svc)
    svc.load()
    await svc.start()
    await eventually(lambda: svc.stats()["connected"])
    yield svc
    await svc.stop()
    svc.close()


def run_events(run_id: str = "r1", site: str = "default") -> list[Event]:
    """One run's events as the core emits them (voiced/events.py payloads)."""
    text = "turn on the kitchen light"
    intent = Intent("HassTurnOn", {"name": "kitchen light"}, text=text)
    response = Response("Turned on the kitchen light", handler="builtin")
    return [
        ev.RunStart("wake").event(run_id, site),
        ev.State("listening", False).event(None, site),
        ev.VadStart(0.5).event(run_id, site),
        ev.VadEnd(2.0, 1.5, "silence").event(run_id, site),
        ev.State("thinking", False).event(None, site),
        ev.Transcript(text, "whisper", "en", 1.5, 0.4, 0.3, 0.2, False).event(run_id, site),
        ev.Intent(**intent.to_dict()).event(run_id, site),
        ev.Handled(**response.to_dict(), seconds=0.01).event(run_id, site),
        ev.State("speaking", False).event(None, site),
        ev.TtsStart(response.speech, 1).event(run_id, site),
        ev.TtsAudio("piper", 1, 0.2, 22050).event(run_id, site),
        ev.RunEnd("done").event(run_id, site),
        ev.State("idle", False).event(None, site),
    ]


async def test_every_event_is_published_as_json_on_its_own_topic(service, mqtt_recorder):
    recorder = mqtt_recorder("voiced/+/event/#")
    events = run_events(site="kitchen")
    for event in events:
        service.voiced_event(event)
    for kind in {str(e.type) for e in events}:
        topic = f"voiced/kitchen/event/{kind}"
        expected = [json.loads(e.to_json()) for e in events if e.type == kind]
        count = len(expected)
        await recorder.until(lambda _ms, t=topic, n=count: len(recorder.payloads(t)) >= n)
        assert [json.loads(p) for p in recorder.payloads(topic)] == expected
    transcript = json.loads(await recorder.first("voiced/kitchen/event/transcript"))
    assert transcript["data"]["text"] == "turn on the kitchen light"
    assert transcript["run_id"] == "r1" and transcript["site_id"] == "kitchen"


async def test_audio_bytes_never_reach_the_broker_by_default(service, mqtt_recorder):
    recorder = mqtt_recorder("#")
    service.voiced_event(Event(EventType.TTS_AUDIO, "r1", "default", {"audio": b"\x7f" * 3200}))
    payload = json.loads(await recorder.first("voiced/default/event/tts-audio"))
    assert payload["data"]["audio"] == "<3200 bytes>"
    assert not any("/audio/" in t or b"\x7f\x7f" in p for t, p, _ in recorder.messages)


async def test_run_state_and_last_results_are_retained_state_topics(service, mqtt_recorder):
    states = mqtt_recorder("voiced/default/state")
    for event in run_events():
        service.voiced_event(event)
    await states.until(lambda ms: [p for _, p, _ in ms][-1:] == [b"idle"] and len(ms) >= 4)
    sequence = [p.decode() for p in states.payloads("voiced/default/state")]
    assert sequence[-4:] == ["listening", "thinking", "speaking", "idle"]
    late = mqtt_recorder("voiced/default/+")  # a new subscriber gets the retained values
    assert await late.first("voiced/default/transcript") == b"turn on the kitchen light"
    assert json.loads(await late.first("voiced/default/intent"))["name"] == "HassTurnOn"
    assert await late.first("voiced/default/response") == b"Turned on the kitchen light"
    assert await late.first("voiced/default/state") == b"idle"
    assert all(retain for _, _, retain in late.messages)


async def test_state_events_from_the_daemon_set_the_state_topic(service, mqtt_recorder):
    states = mqtt_recorder("voiced/default/state")
    service.voiced_event(ev.State("speaking", False).event(None, "default"))
    await states.until(lambda ms: ms and ms[-1][1] == b"speaking")


async def test_say_listen_mute_cancel_commands_reach_the_daemon(
    service, mosquitto, assistant, mqtt_recorder
):
    muted = mqtt_recorder("voiced/office/muted")
    pub = mqtt_recorder("nothing/here")
    pub.client.publish("voiced/office/command/say", "hello there", qos=1)
    pub.client.publish("voiced/office/command/say", json.dumps({"text": "as json"}), qos=1)
    pub.client.publish("voiced/office/command/listen", "", qos=1)
    pub.client.publish("voiced/office/command/mute", "ON", qos=1)
    pub.client.publish("voiced/office/command/mute", '{"muted": false}', qos=1)
    pub.client.publish("voiced/kitchen/command/cancel", "", qos=1)
    expected = [
        ("say", "hello there", "office"),
        ("say", "as json", "office"),
        ("listen", "office"),
        ("mute", True, "office"),
        ("mute", False, "office"),
        ("cancel", "kitchen"),
    ]
    await eventually(lambda: len(assistant.calls) >= len(expected))
    assert assistant.calls == expected
    await muted.until(lambda ms: [p for _, p, _ in ms][-2:] == [b"ON", b"OFF"])


@pytest.mark.parametrize(
    ("command", "payload"),
    [
        ("say", b""),
        ("say", b'{"text": 5}'),
        ("say", b"\xff\xfe"),
        ("mute", b"maybe"),
        ("mute", b"{not json"),
        ("say", b"[" * 100_000),  # deeper than Python's JSON parser can go
        ("reboot", b"now"),
    ],
)
async def test_malformed_commands_give_an_error_event_and_are_otherwise_ignored(
    service, assistant, mqtt_recorder, command, payload
):
    errors = mqtt_recorder("voiced/default/event/error")
    pub = mqtt_recorder("nothing/here")
    pub.client.publish(f"voiced/default/command/{command}", payload, qos=1)
    error = json.loads(await errors.first("voiced/default/event/error"))
    assert error["data"]["stage"] == "mqtt"
    assert f"command/{command}" in error["data"]["message"]
    assert assistant.calls == []
    pub.client.publish("voiced/default/command/say", "still here", qos=1)
    await eventually(lambda: assistant.calls == [("say", "still here", "default")])


async def test_a_failing_command_becomes_an_error_event(service, assistant, mqtt_recorder):
    async def broken_say(text, site_id=None):
        raise RuntimeError("no tts stage loaded")

    assistant.say = broken_say
    pub = mqtt_recorder("nothing/here")
    pub.client.publish("voiced/default/command/say", "hi", qos=1)
    error = await eventually(lambda: assistant.errors())
    assert "no tts stage loaded" in error[0].data["message"]


async def test_status_is_retained_online_and_offline_after_a_clean_stop(
    mosquitto, assistant, mqtt_recorder
):
    svc = MqttService(MqttOptions(url=mosquitto.url, discovery=False), assistant)
    await svc.start()
    status = mqtt_recorder("voiced/status")
    await status.until(lambda ms: b"online" in [p for _, p, _ in ms])
    assert await mqtt_recorder("voiced/status").first("voiced/status") == b"online"
    await svc.stop()
    await status.until(lambda ms: ms[-1][1] == b"offline")
    late = mqtt_recorder("voiced/status")
    assert await late.first("voiced/status") == b"offline"


async def test_the_last_will_says_offline_when_the_connection_dies(
    mosquitto, assistant, mqtt_recorder
):
    svc = MqttService(MqttOptions(url=mosquitto.url, discovery=False, keepalive=5), assistant)
    await svc.start()
    status = mqtt_recorder("voiced/status")
    await status.until(lambda ms: ms and ms[-1][1] == b"online")
    svc.client._client.socket().close()  # the daemon's process dies without a goodbye
    await status.until(lambda ms: b"offline" in [p for _, p, _ in ms])
    await svc.stop()


async def test_publish_goes_through_the_queue_in_order_with_events(service, mqtt_recorder):
    recorder = mqtt_recorder("custom/#", "voiced/default/event/#")
    service.voiced_event(Event(EventType.WAKE, "r1", "default", {"name": "hey_jarvis"}))
    service.publish("custom/topic", {"a": 1})
    service.publish("custom/raw", b"\x01", retain=True)
    await recorder.until(lambda ms: len(ms) >= 3)
    assert [t for t, _, _ in recorder.messages[:3]] == [
        "voiced/default/event/wake",
        "custom/topic",
        "custom/raw",
    ]
    assert json.loads(recorder.messages[1][1]) == {"a": 1}


async def test_a_site_name_with_mqtt_wildcards_stays_one_topic_level(
    service, assistant, mqtt_recorder
):
    events = mqtt_recorder("voiced/+/event/+")
    site = "kids/room#2+"
    service.voiced_event(Event(EventType.RUN_START, "r1", site))
    topic, _ = (await events.until(lambda ms: ms))[0][:2]
    assert topic == "voiced/kids_room_2_/event/run-start"
    # and a command on that level reaches the site by its real name
    events.client.publish("voiced/kids_room_2_/command/say", "good night", qos=1)
    await eventually(lambda: assistant.calls == [("say", "good night", site)])


def test_the_state_kept_for_sites_that_left_is_bounded(assistant):
    """Months of satellites coming and going under new names: the service keeps the last state
    of at most MAX_REMEMBERED_SITES sites, never forgetting its own or one still present."""
    from voiced_plugins.mqtt.service import MAX_REMEMBERED_SITES

    svc = MqttService(MqttOptions(site_id="kitchen"), assistant)
    assistant.sites = {"kitchen", "lounge"}
    svc._expand(ev.State("idle", False).event(None, "lounge"))
    for n in range(MAX_REMEMBERED_SITES + 300):
        svc._expand(ev.State("listening", False).event(None, f"phone-{n}"))
    refresh = svc._refresh_messages(full=False)
    sites = {m.topic.split("/")[1] for m in refresh if m.topic.startswith("voiced/")}
    assert len(sites) <= MAX_REMEMBERED_SITES
    assert {"lounge", f"phone-{MAX_REMEMBERED_SITES + 299}"} <= sites
    assert "phone-0" not in sites
