"""The ``esphome`` service: every configured site served as an ESPHome voice-assistant device."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from voiced.api import events as ev
from voiced.api.events import Event, EventType
from voiced.api.hooks import hookimpl

from .device import Device
from .discovery import Announcer
from .options import EsphomeOptions

log = logging.getLogger(__name__)


class EsphomeService:
    """One ``Device`` (one port) per configured site."""

    def __init__(self, options: EsphomeOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.devices = {d.site_id: Device(d, options, app) for d in options.devices}
        self.announcer = Announcer(options.host) if options.zeroconf else None

    def load(self) -> None:
        """Learn the wake words on offer from the configured wake stages (not loaded here)."""
        if self.app is None:
            return
        words: dict[str, str] = {}
        for name in self.app.settings.pipeline.wake:
            stage = self.app.make_stage("wake", name)
            for word in getattr(stage, "names", None) or [name]:
                words.setdefault(str(word), str(word).replace("_", " ").title())
        for device in self.devices.values():
            device.wake_words = dict(words)
            device.active_wake_words = list(words)

    def close(self) -> None:
        """Nothing held between start and stop."""

    async def start(self) -> None:
        if self.app is None:
            raise RuntimeError("the esphome service needs the running daemon")
        if not self.devices:
            log.warning("esphome: no devices configured ([[stages.service.esphome.devices]])")
        for device in self.devices.values():
            await device.start()
        if self.announcer is not None:
            await self.announcer.start(list(self.devices.values()))

    async def stop(self) -> None:
        if self.announcer is not None:
            await self.announcer.stop()
        await asyncio.gather(*(d.stop() for d in self.devices.values()))

    @hookimpl
    def voiced_event(self, event: Event) -> None:
        device = self.devices.get(event.site_id)
        if device is None:
            return
        if event.type == EventType.MUTED:
            device.on_muted(ev.Muted.from_event(event).muted)
        elif event.type == EventType.WAKE:
            self._on_wake(device, ev.Wake.from_event(event).name)

    def _on_wake(self, device: Device, name: str) -> None:
        """The wake word stops a ringing timer (the stop word); else, at a site Home Assistant
        answers for, hands the turn to its pipeline."""
        loop = asyncio.get_running_loop()
        if device.timers.stop("wake word"):
            loop.call_soon(self.app.cancel, device.site_id)  # "stop" is not a command
        elif device.config.pipeline == "home-assistant":
            loop.call_soon(self._hand_over, device, device.wake_words.get(name, name))

    def _hand_over(self, device: Device, phrase: str) -> None:
        """The wake word was heard at a site Home Assistant answers for: its pipeline runs
        (voiced's own run ends once the audio goes to Home Assistant)."""
        device.conversation.start(reason="wake", wake_word_phrase=phrase)
