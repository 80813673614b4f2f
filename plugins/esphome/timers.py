"""Home Assistant's timers at a site: kept as Home Assistant reports them, and rung on the
site's speaker when one finishes, until the wake word ("stop word") or a stop ends it."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

import numpy as np
from aioesphomeapi.model import VoiceAssistantTimerEventType

from voiced.api.audio import PIPELINE_FORMAT, AudioChunk, float_to_pcm16

if TYPE_CHECKING:
    from .device import Device

log = logging.getLogger(__name__)

MAX_RING_SECONDS = 30.0  # a timer nobody stops rings this long
RING_PAUSE = 1.0  # between two chimes
TimerEvent = VoiceAssistantTimerEventType
RUNNING = (TimerEvent.VOICE_ASSISTANT_TIMER_STARTED, TimerEvent.VOICE_ASSISTANT_TIMER_UPDATED)


def chime(volume: float = 1.0) -> list[AudioChunk]:
    """Two short beeps (880 Hz, then 1320 Hz), the sound of a finished timer."""
    rate = PIPELINE_FORMAT.rate
    t = np.arange(int(rate * 0.18)) / rate
    fade = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.01)  # no clicks
    beeps = [np.sin(2 * np.pi * f * t) * fade * 0.3 for f in (880.0, 1320.0)]
    gap = np.zeros(int(rate * 0.08))
    samples = np.concatenate([beeps[0], gap, beeps[1], gap * 3]) * max(0.0, min(1.0, volume))
    return [AudioChunk(float_to_pcm16(samples))]


class Timers:
    """The timers of one device (site)."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.active: dict[str, dict[str, Any]] = {}
        self.ringing: asyncio.Task[None] | None = None

    def on_event(self, message: Any) -> None:
        kind = TimerEvent(message.event_type)
        info = {
            "timer_id": message.timer_id,
            "name": message.name,
            "total_seconds": message.total_seconds,
            "seconds_left": message.seconds_left,
            "is_active": message.is_active,
        }
        if kind in (
            TimerEvent.VOICE_ASSISTANT_TIMER_STARTED,
            TimerEvent.VOICE_ASSISTANT_TIMER_UPDATED,
        ):
            self.active[message.timer_id] = info
        else:
            self.active.pop(message.timer_id, None)
        what = kind.name.removeprefix("VOICE_ASSISTANT_TIMER_").lower()
        self.device.emit("timer", timer_event=what, **info)
        if kind == TimerEvent.VOICE_ASSISTANT_TIMER_FINISHED:
            self.ring(message.timer_id)

    def ring(self, timer_id: str) -> None:
        if self.ringing is None or self.ringing.done():
            self.ringing = self.device.spawn(self._ring(timer_id))

    def stop(self, reason: str) -> bool:
        """Stop a timer ringing; True when one was."""
        ringing, self.ringing = self.ringing, None
        if ringing is None or ringing.done():
            return False
        ringing.cancel()
        self.device.emit("timer-stopped", reason=reason)
        return True

    async def _ring(self, timer_id: str) -> None:
        loop = asyncio.get_running_loop()
        until = loop.time() + MAX_RING_SECONDS
        rings = 0
        while loop.time() < until:
            played = await self.device.app.play(
                chime(self.device.state.volume), self.device.site_id, "timer"
            )
            if not played:  # cancelled (the wake word, a stop) or no speaker
                self.device.emit("timer-stopped", timer_id=timer_id, reason="stopped", rings=rings)
                return
            rings += 1
            await asyncio.sleep(RING_PAUSE)
        self.device.emit("timer-stopped", timer_id=timer_id, reason="rang out", rings=rings)
