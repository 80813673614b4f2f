"""Bounds on what one request may ask of the daemon, so months of careless or hostile input
cost bounded time and memory (docs/limits.md lists every limit)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

EVENT_TEXT_CHARS = 1000
"""The most characters of one text field an event carries (the rest is summarized)."""


class TextTooLong(ValueError):
    """Text to speak over ``pipeline.max_say_chars``: refused whole, nothing is spoken."""


def check_say_text(text: str, limit: int, what: str = "say") -> None:
    """Raise ``TextTooLong`` when ``text`` is over ``limit`` characters."""
    if len(text) > limit:
        raise TextTooLong(
            f"{what}: the text is {len(text)} characters, over the limit of {limit} "
            "(pipeline.max_say_chars)"
        )


def clip(text: str, limit: int = EVENT_TEXT_CHARS) -> str:
    """``text`` as an event carries it: whole when short, else its start and its length."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more characters]"


class CommandRefused(RuntimeError):
    """A command the daemon will not take: an unknown site, or a full queue at the site."""


class Admission:
    """A bounded queue per site: commands there run one at a time, in order; one more than
    ``limit`` waiting or running is refused at once (no pile of tasks and timers)."""

    def __init__(self, limit: int, what: str) -> None:
        self.limit, self.what = limit, what
        self._locks: dict[str, asyncio.Lock] = {}
        self._counts: dict[str, int] = {}

    def pending(self, site_id: str) -> int:
        return self._counts.get(site_id, 0)

    @contextlib.asynccontextmanager
    async def admit(self, site_id: str) -> AsyncIterator[None]:
        count = self._counts.get(site_id, 0)
        if count >= self.limit:
            raise CommandRefused(
                f"{self.what} at {site_id!r} refused: {count} already queued or speaking "
                f"(pipeline.max_commands_per_site = {self.limit})"
            )
        self._counts[site_id] = count + 1
        lock = self._locks.setdefault(site_id, asyncio.Lock())
        try:
            async with lock:
                yield
        finally:
            self._counts[site_id] -= 1
            if not self._counts[site_id]:  # an idle site keeps nothing
                del self._counts[site_id]
                self._locks.pop(site_id, None)
