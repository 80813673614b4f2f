"""With no broker configured the service brings its own (amqtt) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from mqtt_fixtures import Recorder, eventually, free_port
from voiced_plugins.mqtt import MqttOptions, MqttService

from voiced.events import Event, EventType


async def test_the_embedded_broker_serves_the_service_and_other_clients(assistant):
    port = free_port()
    svc = MqttService(MqttOptions(embedded_port=port, reconnect_min_delay=0.1), assistant)
    assistant.observers.append(svc)
    await svc.start()
    try:
        assert svc.embedded is not None
        await eventually(lambda: svc.stats()["connected"])
        assert svc.client.protocol == "3.1.1"  # amqtt speaks 3.1.1: the client fell back
        # the broker runs on this loop: make the subscriber off it
        recorder = await asyncio.to_thread(Recorder, port, ["voiced/#"])
        try:
            svc.voiced_event(Event(EventType.TRANSCRIPT, "r1", data={"text": "hello"}))
            payload = json.loads(await recorder.first("voiced/default/event/transcript"))
            assert payload["data"]["text"] == "hello"
            recorder.client.publish("voiced/default/command/say", "hi", qos=1)
            await eventually(lambda: assistant.calls == [("say", "hi", "default")])
        finally:
            await asyncio.to_thread(recorder.close)
    finally:
        await svc.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), 0.5).close()


async def test_a_configured_broker_never_starts_an_embedded_one(mosquitto, assistant):
    svc = MqttService(MqttOptions(url=mosquitto.url), assistant)
    await svc.start()
    try:
        assert svc.embedded is None
        await eventually(lambda: svc.stats()["connected"])
        assert svc.client.protocol == "5"
    finally:
        await svc.stop()


async def test_a_busy_port_is_named_in_a_clear_error(mosquitto, assistant):
    svc = MqttService(MqttOptions(embedded_port=mosquitto.port), assistant)
    await svc.start()
    try:
        errors = await eventually(assistant.errors)
        message = errors[0].data["message"]
        assert f"127.0.0.1:{mosquitto.port} is already in use" in message
        assert "host/url" in message
        # what listens there (here: mosquitto) is then used
        await eventually(lambda: svc.stats()["connected"])
    finally:
        await svc.stop()


async def test_a_broker_that_refuses_mqtt5_gets_mqtt_311():
    from voiced_plugins.mqtt.broker import EmbeddedBroker
    from voiced_plugins.mqtt.client import MqttClient

    broker = EmbeddedBroker(free_port())
    await broker.start()
    connected: list[str] = []
    client = MqttClient(
        MqttOptions(host=broker.host, port=broker.port, reconnect_min_delay=0.1),
        on_connect=lambda: connected.append("yes"),
    )
    client.start()
    try:
        await eventually(lambda: connected)  # amqtt answers MQTT 5 with "unsupported"
        assert client.protocol == "3.1.1" and client.connected
    finally:
        await asyncio.to_thread(client.stop)
        await broker.stop()
