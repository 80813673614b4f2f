"""``voiced mqtt forget``: remove voiced's device from Home Assistant."""

from __future__ import annotations

import argparse
import threading

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from .options import MqttOptions
from .topics import Topics

HELP = "remove voiced's device from Home Assistant (empty retained discovery config)"


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", dest="mqtt_config", metavar="PATH", default=None, help="config file (TOML)"
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for broker")


def run(args: argparse.Namespace) -> int:
    from voiced.api.config import ConfigError, load_settings

    try:
        path = getattr(args, "mqtt_config", None) or getattr(args, "config", None)
        settings = load_settings(path)
        options = MqttOptions(**settings.stage_options("service", "mqtt"))
    except (ConfigError, ValueError) as exc:
        print(f"voiced mqtt forget: {exc}")
        return 2
    try:
        topic = forget(options, settings.site_id, timeout=args.timeout)
    except (OSError, RuntimeError) as exc:
        print(f"voiced mqtt forget: {exc}")
        return 1
    print(f"removed: published an empty retained config on {topic}")
    return 0


def forget(options: MqttOptions, site_id: str, timeout: float = 10.0) -> str:
    """Publish the empty retained discovery config (and clear ``status``); returns the topic."""
    endpoint = options.endpoint()
    if not options.broker_configured:
        endpoint = options.model_copy(update={"host": "127.0.0.1", "port": options.embedded_port})
        endpoint = endpoint.endpoint()
    topics = Topics(options.prefix, options.discovery_prefix)
    device_id, _ = options.device(options.site(site_id))
    config_topic = topics.device_config(device_id)
    last: str | None = None
    protocols = {"auto": (paho.MQTTv5, paho.MQTTv311), "5": (paho.MQTTv5,)}
    for protocol in protocols.get(options.protocol, (paho.MQTTv311,)):
        client = paho.Client(CallbackAPIVersion.VERSION2, protocol=protocol)
        if endpoint.username is not None:
            client.username_pw_set(endpoint.username, endpoint.password)
        if endpoint.tls:
            client.tls_set_context(options.tls.context())
        ready = threading.Event()
        result: list = []

        def on_connect(client, userdata, flags, reason, properties, ready=ready, result=result):
            result.append(reason)
            ready.set()

        client.on_connect = on_connect
        client.connect(endpoint.host, endpoint.port, keepalive=30)
        client.loop_start()
        try:
            if not ready.wait(timeout):
                raise RuntimeError(f"no answer from MQTT broker {endpoint} in {timeout:g} s")
            if result[0].is_failure:
                last = f"MQTT broker {endpoint} refused: {result[0]} (code {result[0].value})"
                continue
            for topic in (config_topic, topics.status):
                client.publish(topic, b"", qos=1, retain=True).wait_for_publish(timeout)
            return config_topic
        finally:
            client.disconnect()
            client.loop_stop()
    raise RuntimeError(last or f"could not connect to {endpoint}")
