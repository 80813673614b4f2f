"""Service ``esphome``: voiced's sites as Home Assistant voice satellites (ESPHome native API).

Each configured site is one ESPHome voice-assistant device on a port of its own, added in Home
Assistant by host and port. Home Assistant then shows an assist satellite (announce,
start_conversation), a media player, a mute switch and wake-word, pipeline and
finished-speaking selects for it. After the wake word, a site's own pipeline answers
(``pipeline = "voiced"``) or Home Assistant's (``"home-assistant"``: the audio is streamed to
it and its answer is played here). Needs the ``esphome`` extra (``aioesphomeapi``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voiced.api.hooks import hookimpl

from .doctor import esphome_checks
from .options import DeviceOptions, EsphomeOptions

__all__ = ["DeviceOptions", "EsphomeOptions"]

EXTRA = "pip install 'voiced[esphome]'"


def make_service(options: EsphomeOptions, app: Any = None) -> Any:
    """The service, imported only when configured (the extra may be missing)."""
    try:
        from .service import EsphomeService
    except ImportError as exc:
        raise RuntimeError(
            f"the esphome service needs the esphome extra ({exc.name} is missing): {EXTRA}"
        ) from exc
    return EsphomeService(options, app)


@hookimpl
def voiced_register_stages(register: Callable[..., None]) -> None:
    register(
        "service",
        "esphome",
        make_service,
        options=EsphomeOptions,
        description="ESPHome native API: each site a Home Assistant voice satellite",
    )


@hookimpl
def voiced_doctor_checks(config: Any) -> list[Any]:
    return esphome_checks(config)
