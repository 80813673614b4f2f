"""The mqtt plugins are found through the entry points like any third-party plugin."""

from __future__ import annotations

from voiced_plugins.handle_mqtt import MqttActions, MqttActionsOptions
from voiced_plugins.mqtt import MqttOptions, MqttService

from voiced.plugins import load_plugins


def test_the_service_and_the_handler_are_registered_stages():
    host = load_plugins()
    service = host.stage_spec("service", "mqtt")
    assert service.factory is MqttService and service.options is MqttOptions
    handler = host.stage_spec("handler", "mqtt-actions")
    assert handler.factory is MqttActions and handler.options is MqttActionsOptions


def test_the_service_object_joins_the_event_hook():
    host = load_plugins()
    svc = MqttService(MqttOptions(), None)
    host.pm.register(svc, name="mqtt-service")
    try:
        impls = [i.plugin for i in host.pm.hook.voiced_event.get_hookimpls()]
        assert svc in impls
    finally:
        host.pm.unregister(svc)


def test_voiced_mqtt_forget_is_a_cli_command(mosquitto, tmp_path, capsys):
    from voiced.cli import main

    config = tmp_path / "voiced.toml"
    config.write_text(f'[stages.service.mqtt]\nurl = "{mosquitto.url}"\n')
    assert main(["--config", str(config), "mqtt", "forget"]) == 0
    assert "homeassistant/device/voiced_default/config" in capsys.readouterr().out


def test_forget_says_why_when_the_broker_refuses(mosquitto, tmp_path, capsys):
    from voiced.cli import main

    config = tmp_path / "voiced.toml"
    config.write_text(
        f'[stages.service.mqtt]\nhost = "127.0.0.1"\nport = {mosquitto.auth_port}\n'
        'username = "voiced"\npassword = "nope"\n'
    )
    assert main(["mqtt", "forget", "--config", str(config), "--timeout", "5"]) == 1
    out = capsys.readouterr().out
    assert "refused" in out and str(mosquitto.auth_port) in out
