"""Logging in and TLS against mosquitto's password and TLS listeners."""

from __future__ import annotations

import asyncio
import json

import pytest
from mqtt_fixtures import eventually
from voiced_plugins.mqtt import MqttOptions, MqttService, TlsOptions

from voiced.events import Event, EventType


async def started(options: MqttOptions, assistant) -> MqttService:
    svc = MqttService(options, assistant)
    assistant.observers.append(svc)
    await svc.start()
    return svc


async def test_username_and_password_log_in(mosquitto, assistant, mqtt_recorder):
    options = MqttOptions(
        host="127.0.0.1", port=mosquitto.auth_port, username="voiced", password="s3cret"
    )
    svc = await started(options, assistant)
    try:
        await eventually(lambda: svc.stats()["connected"])
        assert assistant.errors() == []
    finally:
        await svc.stop()


async def test_credentials_in_the_url_log_in(mosquitto, assistant):
    url = f"mqtt://voiced:s3cret@127.0.0.1:{mosquitto.auth_port}"
    svc = await started(MqttOptions(url=url), assistant)
    try:
        await eventually(lambda: svc.stats()["connected"])
    finally:
        await svc.stop()


async def test_a_wrong_password_is_a_clear_error_and_the_service_keeps_running(
    mosquitto, assistant, caplog
):
    options = MqttOptions(
        host="127.0.0.1",
        port=mosquitto.auth_port,
        username="voiced",
        password="wrong",
        reconnect_min_delay=0.1,
        reconnect_max_delay=0.2,
    )
    svc = await started(options, assistant)
    try:
        errors = await eventually(assistant.errors)
        message = errors[0].data["message"]
        assert f"127.0.0.1:{mosquitto.auth_port}" in message
        assert "'voiced'" in message and "password" in message
        assert errors[0].data["reason_code"] in (134, 135)
        assert "wrong" not in message
        assert any(
            r.levelname == "ERROR" and "refused the login" in r.message for r in caplog.records
        )
        # the service takes events as before and does not report the same error again
        svc.voiced_event(Event(EventType.RUN_START, "r1"))
        await eventually(lambda: svc.stats()["queued"] >= 1)
        assert len(assistant.errors()) == 1
        await asyncio.sleep(0.5)  # a few refused reconnects
    finally:
        await svc.stop()
    assert not svc.stats()["connected"]
    # the broker answered in MQTT 5: a refused login is no reason to change protocol
    assert svc.client.protocol == "5"
    assert not any("falling back to MQTT 3.1.1" in r.message for r in caplog.records)


def test_the_password_is_masked_in_the_options():
    options = MqttOptions(username="voiced", password="s3cret")
    assert "s3cret" not in repr(options) and "s3cret" not in str(options.model_dump())
    assert options.endpoint().password == "s3cret"


async def test_tls_with_certificate_verification(mosquitto, certs, assistant, mqtt_recorder):
    recorder = mqtt_recorder("voiced/default/event/#")
    options = MqttOptions(
        url=f"mqtts://127.0.0.1:{mosquitto.tls_port}", tls=TlsOptions(ca_file=certs.ca)
    )
    svc = await started(options, assistant)
    try:
        await eventually(lambda: svc.stats()["connected"])
        svc.voiced_event(Event(EventType.WAKE, "r1", data={"name": "hey_jarvis"}))
        payload = json.loads(await recorder.first("voiced/default/event/wake"))
        assert payload["data"] == {"name": "hey_jarvis"}
    finally:
        await svc.stop()


async def test_tls_refuses_a_server_it_cannot_verify(mosquitto, assistant):
    options = MqttOptions(
        host="127.0.0.1",
        port=mosquitto.tls_port,
        tls=TlsOptions(enabled=True),
        reconnect_min_delay=0.1,
        reconnect_max_delay=0.2,
    )
    svc = await started(options, assistant)
    try:
        errors = await eventually(assistant.errors)
        assert "CERTIFICATE_VERIFY_FAILED" in errors[0].data["message"]
        assert f"127.0.0.1:{mosquitto.tls_port}" in errors[0].data["message"]
        assert not svc.stats()["connected"]
    finally:
        await svc.stop()


async def test_insecure_tls_is_an_explicit_opt_in(mosquitto, assistant):
    options = MqttOptions(
        host="127.0.0.1", port=mosquitto.tls_port, tls=TlsOptions(enabled=True, insecure=True)
    )
    svc = await started(options, assistant)
    try:
        await eventually(lambda: svc.stats()["connected"])
    finally:
        await svc.stop()


def test_a_missing_ca_file_is_a_config_error_naming_it(tmp_path):
    with pytest.raises(ValueError, match=r"tls\.ca_file: file not found"):
        TlsOptions(ca_file=tmp_path / "nope.pem")
