"""``voiced doctor``'s MQTT section (this plugin's ``voiced_doctor_checks``): the configured
broker is reachable and accepts the login, or the embedded one can start."""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from pydantic import ValidationError

from voiced.api.config import Settings
from voiced.api.doctor import Check

from .options import MqttOptions


def mqtt_check(endpoint: Any, tls_context: Any = None, timeout: float = 3.0) -> Check:
    """Connect to the broker with paho and report reachability and login."""
    import paho.mqtt.client as paho
    from paho.mqtt.enums import CallbackAPIVersion

    name = f"MQTT broker {endpoint}"
    user = endpoint.username
    client = paho.Client(
        CallbackAPIVersion.VERSION2,
        client_id=f"voiced-doctor-{os.getpid()}",
        protocol=paho.MQTTv311,
    )
    if user is not None:
        client.username_pw_set(user, endpoint.password)
    if endpoint.tls and tls_context is not None:
        client.tls_set_context(tls_context)
    answer: dict[str, Any] = {}

    def on_connect(client: Any, userdata: Any, flags: Any, reason: Any, properties: Any) -> None:
        """Keep the broker's CONNACK reason code."""
        answer["reason"] = reason

    client.on_connect = on_connect
    try:
        client.connect(endpoint.host, endpoint.port, keepalive=10)
    except (OSError, ValueError) as exc:
        return Check(
            name,
            False,
            f"cannot connect: {exc}",
            "start the broker (sudo systemctl start mosquitto) or set host/port in "
            "[stages.service.mqtt]; remove url/host to use the embedded broker",
            required=True,
            section="mqtt",
        )
    deadline = time.monotonic() + timeout
    while "reason" not in answer and time.monotonic() < deadline:
        client.loop(timeout=0.1)
    client.disconnect()
    reason = answer.get("reason")
    if reason is None:
        return Check(
            name,
            False,
            f"no MQTT answer within {timeout:.0f} s",
            "is it an MQTT port (TLS on 8883 needs mqtts://)? a firewall?",
            required=True,
            section="mqtt",
        )
    if reason.is_failure:
        who = f"user {user!r}" if user else "anonymous login"
        return Check(
            name,
            False,
            f"refused {who}: {reason}",
            "set username and password in [stages.service.mqtt] (or "
            "VOICED_STAGES__SERVICE__MQTT__PASSWORD in /etc/voiced/voiced.env)",
            required=True,
            section="mqtt",
        )
    who = f" as {user!r}" if user else ""
    return Check(name, True, f"connected{who}", required=True, section="mqtt")


def mqtt_checks(settings: Settings) -> list[Check]:
    """The MQTT service's broker: embedded, or the configured one reachable."""
    if "mqtt" not in settings.pipeline.service:
        return []
    try:
        options = MqttOptions.model_validate(settings.stage_options("service", "mqtt"))
    except ValidationError as exc:
        return [
            Check(
                "MQTT options",
                False,
                f"stages.service.mqtt: {exc}",
                "fix [stages.service.mqtt]",
                required=True,
                section="mqtt",
            )
        ]
    if not options.broker_configured:
        port = options.embedded_port
        busy = _port_in_use("127.0.0.1", port)
        return [
            Check(
                "MQTT broker",
                True if not busy else None,
                f"none configured: voiced starts an embedded broker on 127.0.0.1:{port}"
                + (
                    f"; but port {port} is already in use (voiced will use whatever listens there)"
                    if busy
                    else ""
                ),
                "set host (your broker) in [stages.service.mqtt]" if busy else "",
                section="mqtt",
            )
        ]
    endpoint = options.endpoint()
    context = None
    if endpoint.tls:
        try:
            context = options.tls.context()
        except (OSError, ValueError) as exc:
            return [
                Check(
                    f"MQTT broker {endpoint}",
                    False,
                    f"TLS setup failed: {exc}",
                    "check tls.ca_file / certfile / keyfile",
                    required=True,
                    section="mqtt",
                )
            ]
    return [mqtt_check(endpoint, context)]


def _port_in_use(host: str, port: int) -> bool:
    """Whether something listens on host:port."""
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0
