"""The MQTT broker: found, probed with the credentials and TLS given, or voiced's own.

The probe is a real MQTT CONNECT (paho): the broker's own answer says whether the address,
the login and the certificate are right.
"""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path
from typing import Any

from voiced.setup.answers import MqttAnswer
from voiced.setup.console import Console, SetupError

REFUSALS = {  # CONNACK reasons that mean the login is wrong
    "Not authorized", "Bad user name or password", "Bad username or password",
}  # fmt: skip


def port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def probe_broker(answer: MqttAnswer, timeout: float = 5.0) -> None:
    """Connect and disconnect once; SetupError naming what is wrong."""
    import paho.mqtt.client as mqtt

    where = f"{answer.host}:{answer.port}"
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv311)
    if answer.username:
        client.username_pw_set(answer.username, answer.password)
    if answer.tls:
        client.tls_set_context(ssl.create_default_context(cafile=answer.ca_file or None))
    result: dict[str, Any] = {}
    done = threading.Event()

    def on_connect(client: Any, userdata: Any, flags: Any, reason: Any, props: Any) -> None:
        result["reason"] = str(reason)
        result["failed"] = bool(getattr(reason, "is_failure", False))
        done.set()

    client.on_connect = on_connect
    try:
        client.connect(answer.host or "127.0.0.1", answer.port, keepalive=10)
    except ssl.SSLError as exc:
        raise SetupError(f"TLS to the broker at {where} failed ({exc.reason or exc}): "
                         "is the CA file right (--mqtt-ca-file)?") from None  # fmt: skip
    except OSError as exc:
        raise SetupError(f"no MQTT broker at {where} ({exc.strerror or exc})") from None
    client.loop_start()
    try:
        if not done.wait(timeout):
            raise SetupError(f"the broker at {where} did not answer in {timeout:.0f} s "
                             "(a TLS port spoken to without --mqtt-tls?)")  # fmt: skip
    finally:
        client.disconnect()
        client.loop_stop()
    if result["failed"]:
        if result["reason"] in REFUSALS:
            raise SetupError(f"the broker at {where} refused the login ({result['reason']}): "
                             "check --mqtt-username / --mqtt-password")  # fmt: skip
        raise SetupError(f"the broker at {where} refused the connection: {result['reason']}")


def ask_mqtt(console: Console, flags: Any, suggested: str | None) -> MqttAnswer:
    """The broker: the flags, else asked (Home Assistant's broker suggested); or voiced's own."""
    console.heading("MQTT broker")
    default = suggested or ("127.0.0.1" if port_open("127.0.0.1", 1883) else "")
    if suggested:
        console.ok(f"Home Assistant uses the broker at {suggested}")

    def attempt(first: bool) -> MqttAnswer:
        host = console.ask("Broker host (empty: voiced runs its own on 127.0.0.1)",
                           "--mqtt-host", flags.mqtt_host if first else None, default)  # fmt: skip
        if not host or host == "embedded":
            console.ok("voiced will run its own broker on 127.0.0.1:1883")
            return MqttAnswer()
        tls = console.confirm("TLS?", "--mqtt-tls", flags.mqtt_tls if first else None, False)
        port_text = console.ask("Broker port", "--mqtt-port",
                                str(flags.mqtt_port) if first and flags.mqtt_port else None,
                                "8883" if tls else "1883")  # fmt: skip
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise SetupError(f"port {port_text!r}: a number from 1 to 65535")
        username = console.ask("Username (empty: none)", "--mqtt-username",
                               flags.mqtt_username if first else None, "")  # fmt: skip
        password = ""
        if username:
            password = console.ask("Password", "--mqtt-password-file",
                                   _read_secret(flags.mqtt_password_file) if first else None,
                                   None, secret=True)  # fmt: skip
        ca_file = str(Path(flags.mqtt_ca_file).resolve()) if tls and flags.mqtt_ca_file else None
        answer = MqttAnswer(host, int(port_text), username or None, password or None, tls, ca_file)
        probe_broker(answer)
        console.ok(
            f"connected to the broker at {host}:{port_text}"
            + (f" as {username}" if username else "")
            + (" over TLS" if tls else "")
        )
        return answer

    return console.until_valid(attempt)


def _read_secret(path: str | None) -> str | None:
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read(4096).strip()
    except OSError as exc:
        raise SetupError(f"--mqtt-password-file {path}: {exc.strerror}") from None
