"""MQTT: pipeline events out, commands in, Home Assistant discovery, Hermes (Rhasspy 2.5).

The ``mqtt`` service (kind ``service``) and the ``voiced mqtt forget`` command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voiced.api.hooks import hookimpl

from . import forget
from .doctor import mqtt_checks
from .options import MqttOptions, TlsOptions
from .service import Message, MqttService

__all__ = ["Message", "MqttOptions", "MqttService", "TlsOptions"]


@hookimpl
def voiced_register_stages(register: Callable[..., None]) -> None:
    register(
        "service",
        "mqtt",
        MqttService,
        options=MqttOptions,
        description="MQTT events/commands, Home Assistant discovery, Hermes; embedded broker",
    )


@hookimpl
def voiced_register_commands(add_command: Callable[..., Any]) -> None:
    add_command("mqtt forget", forget.HELP, forget.configure_parser, forget.run)


@hookimpl
def voiced_doctor_checks(config: Any) -> list[Any]:
    return mqtt_checks(config)
