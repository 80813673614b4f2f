"""``voiced doctor``'s ESPHome lines: the extra is installed, each device's port and site."""

from __future__ import annotations

import importlib.util
import socket

from pydantic import ValidationError

from voiced.api.config import Settings
from voiced.api.doctor import Check

from .options import EsphomeOptions

SECTION = "plugins"


def esphome_checks(settings: Settings) -> list[Check]:
    """One line for the extra, one per device (its port: free, or in use by voiced itself)."""
    if "esphome" not in settings.pipeline.service:
        return []
    try:
        options = EsphomeOptions.model_validate(settings.stage_options("service", "esphome"))
    except ValidationError as exc:
        return [
            Check(
                "ESPHome options",
                False,
                f"stages.service.esphome: {exc}",
                "fix [stages.service.esphome]",
                required=True,
                section=SECTION,
            )
        ]
    checks = [_extra_check()]
    if not options.devices:
        checks.append(
            Check(
                "ESPHome devices",
                None,
                "none configured: no site is a satellite",
                "add [[stages.service.esphome.devices]] site_id = ..., port = 6053",
                section=SECTION,
            )
        )
    for device in options.devices:
        busy = _in_use(options.host, device.port)
        security = "noise-encrypted" if device.encryption_key else "plaintext"
        detail = (
            f"site {device.site_id!r}, {security}, {device.pipeline} answers after the wake "
            f"word; add it in Home Assistant: ESPHome, host {options.host}, port {device.port}"
        )
        if busy:
            detail += " (the port is in use: voiced running, or another program)"
        checks.append(
            Check(
                f"ESPHome device {device.node_name()} on {options.host}:{device.port}",
                True if not busy else None,
                detail,
                section=SECTION,
            )
        )
    return checks


def _extra_check() -> Check:
    if importlib.util.find_spec("aioesphomeapi") is None:
        return Check(
            "ESPHome API library",
            False,
            "aioesphomeapi is not installed",
            "pip install 'voiced[esphome]'",
            required=True,
            section=SECTION,
        )
    return Check("ESPHome API library", True, "aioesphomeapi installed", section=SECTION)


def _in_use(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0
