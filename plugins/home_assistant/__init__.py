"""Home Assistant as the home: learn the home from it, act through it.

* service ``home-assistant``: floors, areas and the entities exposed to Assist, over Home
  Assistant's WebSocket API, into the intent recognizer; live on registry changes; cached.
* handler ``home-assistant``: recognized intents are executed by Home Assistant's intent API,
  and its response is the answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voiced.api.hooks import hookimpl

from .handler import HandlerOptions, HomeAssistantHandler
from .home_source import HomeAssistantHome, HomeSourceOptions
from .options import HomeAssistantConfigError, HomeAssistantConnection

__all__ = [
    "HandlerOptions",
    "HomeAssistantConfigError",
    "HomeAssistantConnection",
    "HomeAssistantHandler",
    "HomeAssistantHome",
    "HomeSourceOptions",
]

NAME = "home-assistant"


@hookimpl
def voiced_register_stages(register: Callable[..., None]) -> None:
    register(
        "service", NAME, HomeAssistantHome, options=HomeSourceOptions,
        description="the home (areas, floors, exposed entities) from Home Assistant, live",
    )  # fmt: skip
    register(
        "handler", NAME, HomeAssistantHandler, options=HandlerOptions,
        description="execute intents in Home Assistant and speak its answer",
    )  # fmt: skip


@hookimpl
def voiced_doctor_checks(config: Any) -> list[Any]:
    if NAME not in getattr(config.pipeline, "service", []):
        return []
    from .doctor import home_assistant_checks

    options = HomeSourceOptions.model_validate(config.stage_options("service", NAME))
    return home_assistant_checks(options)
