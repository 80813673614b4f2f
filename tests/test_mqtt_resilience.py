"""Broker loss: the service keeps taking events, queues them (bounded) and delivers in order."""

from __future__ import annotations

import asyncio
import functools
import json
import logging

from mqtt_fixtures import eventually
from voiced_plugins.mqtt import MqttOptions, MqttService

from voiced import events as ev
from voiced.events import Event, EventType

TOPIC = "voiced/default/event/timer"


def seqs(recorder) -> list[int]:
    return [json.loads(p)["data"]["seq"] for p in recorder.payloads(TOPIC)]


def first_seen(values: list[int]) -> list[int]:
    seen: dict[int, None] = {}
    for value in values:
        seen.setdefault(value, None)
    return list(seen)


async def service_for(mosquitto, assistant, **options) -> MqttService:
    svc = MqttService(
        MqttOptions(
            url=mosquitto.url,
            discovery=False,
            reconnect_min_delay=0.1,
            reconnect_max_delay=0.3,
            **options,
        ),
        assistant,
    )
    assistant.observers.append(svc)
    await svc.start()
    await eventually(lambda: svc.stats()["connected"])
    return svc


async def test_broker_restarted_mid_stream_loses_no_qos1_event(mosquitto, assistant, mqtt_recorder):
    # a persistent subscriber session (mosquitto saves it on SIGTERM) sees everything
    recorder = mqtt_recorder(TOPIC, client_id="persistent-sub", persistent=True)
    svc = await service_for(mosquitto, assistant, queue_size=5000)
    total = 600
    restart = None
    for seq in range(total):
        svc.voiced_event(Event(EventType.TIMER, "r1", data={"seq": seq}))
        if seq == 150:
            restart = asyncio.ensure_future(asyncio.to_thread(mosquitto.restart, 1.0))
        await asyncio.sleep(0.004)
    await restart
    await recorder.until(lambda ms: len(set(seqs(recorder))) == total, timeout=30)
    assert first_seen(seqs(recorder)) == list(range(total))
    assert svc.stats()["dropped"] == 0
    assert svc._thread is not None and svc._thread.is_alive()
    await eventually(lambda: svc.stats()["connected"])
    # subscriptions were made again on reconnect: commands still arrive
    mqtt_recorder("nothing/here").client.publish("voiced/default/command/listen", "", qos=1)
    await eventually(lambda: ("listen", "default") in assistant.calls)
    await svc.stop()


async def test_while_the_broker_is_away_the_oldest_events_are_dropped_and_reported(
    mosquitto, assistant, mqtt_recorder
):
    recorder = mqtt_recorder(TOPIC, "voiced/default/event/error", client_id="sub2", persistent=True)
    svc = await service_for(mosquitto, assistant, queue_size=5)
    await asyncio.to_thread(mosquitto.stop)
    await eventually(lambda: not svc.stats()["connected"])
    for seq in range(20):
        svc.voiced_event(Event(EventType.TIMER, "r1", data={"seq": seq}))
    assert svc.stats()["dropped"] == 15
    await asyncio.to_thread(mosquitto.start)
    await recorder.until(lambda ms: len(set(seqs(recorder))) == 5, timeout=20)
    assert first_seen(seqs(recorder)) == [15, 16, 17, 18, 19]
    error = json.loads(await recorder.first("voiced/default/event/error"))
    assert error["data"]["dropped"] == 15 and "dropped the 15 oldest" in error["data"]["message"]
    assert "away" in error["data"]["message"]
    await svc.stop()


async def test_a_flood_with_the_broker_up_is_reported_as_falling_behind_not_as_broker_away(
    mosquitto, assistant, mqtt_recorder
):
    recorder = mqtt_recorder("voiced/default/event/error")
    svc = await service_for(mosquitto, assistant, queue_size=5, max_inflight=1)
    for seq in range(2000):  # faster than one message in flight at a time can go
        svc.voiced_event(Event(EventType.TIMER, "r1", data={"seq": seq}))
    assert svc.stats()["dropped"] > 0
    error = json.loads(await recorder.first("voiced/default/event/error", timeout=20))
    assert "faster than broker" in error["data"]["message"]
    assert "away" not in error["data"]["message"]
    await svc.stop()


async def test_state_topics_are_refreshed_after_a_reconnect(mosquitto, assistant, mqtt_recorder):
    svc = await service_for(mosquitto, assistant)
    heard = ev.Transcript("what time is it", "whisper", "en", 1.2, 0.4, 0.3, 0.25, False)
    svc.voiced_event(heard.event("r1"))
    probe = mqtt_recorder("voiced/default/transcript")
    assert await probe.first("voiced/default/transcript") == b"what time is it"
    # a broker without persistence forgets retained messages: the service re-publishes them
    await asyncio.to_thread(mosquitto.stop, 9)  # SIGKILL: nothing saved since last autosave
    (mosquitto.folder / "mosquitto.db").unlink(missing_ok=True)
    await asyncio.to_thread(mosquitto.start)
    await eventually(lambda: svc.stats()["connected"], timeout=15)
    late = mqtt_recorder("voiced/default/transcript", "voiced/status")
    assert await late.first("voiced/default/transcript") == b"what time is it"
    assert await late.first("voiced/status") == b"online"
    await svc.stop()


async def test_a_clean_stop_logs_no_error(mosquitto, caplog):
    """paho's thread can take one more turn after the socket is closed and log "Client is not
    connected": a user must not see an error for a normal shutdown."""
    from voiced_plugins.mqtt.client import MqttClient

    caplog.set_level(logging.DEBUG, logger="voiced_plugins.mqtt")
    for _ in range(20):
        connected = asyncio.Event()
        loop = asyncio.get_running_loop()
        client = MqttClient(
            MqttOptions(host="127.0.0.1", port=mosquitto.port),
            on_connect=functools.partial(loop.call_soon_threadsafe, connected.set),
        )
        client.start()
        await asyncio.wait_for(connected.wait(), 10)
        client.publish("voiced/test/stop", b"x", qos=1)
        await asyncio.to_thread(client.stop)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_a_client_started_twice_keeps_one_session(mosquitto, caplog):
    """Two paho clients with one id take the session from each other in turn: a second start
    (a stage loaded twice) must not build a second one."""
    from voiced_plugins.mqtt.client import MqttClient

    caplog.set_level(logging.INFO, logger="voiced_plugins.mqtt")
    connects: list[float] = []
    client = MqttClient(
        MqttOptions(host="127.0.0.1", port=mosquitto.port, client_id="voiced-started-twice"),
        on_connect=lambda: connects.append(1),
    )
    client.start()
    await eventually(lambda: client.connected, timeout=10)
    client.start()
    await asyncio.sleep(3)  # a session taken over comes back within a second of backoff
    await asyncio.to_thread(client.stop)
    assert connects == [1]
    assert not [r for r in caplog.records if "MQTT lost" in r.getMessage()]


def test_pahos_turn_without_a_socket_is_no_error(caplog):
    """paho logs a loop turn that finds no socket (its race with disconnect, or between its
    reconnect tries) as an error; the client reports losses itself, so that turn is DEBUG."""
    from voiced_plugins.mqtt.client import PAHO_LOG

    caplog.set_level(logging.DEBUG, logger="voiced_plugins.mqtt")
    PAHO_LOG.error(
        "Client is not connected. Socket: None). Last known Connection State: MQTT_CS_CONNECTING"
    )
    PAHO_LOG.error("failed to receive on socket: [Errno 32] Broken pipe")
    levels = [(r.levelname, r.getMessage()[:22]) for r in caplog.records]
    assert levels == [("DEBUG", "Client is not connecte"), ("ERROR", "failed to receive on s")]
