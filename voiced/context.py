"""What plugins may see and ask of the running daemon."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from voiced.config import Settings
    from voiced.events import Event


class Assistant(Protocol):
    """The daemon as plugins see it (``app`` in stage factories and run contexts)."""

    settings: Settings

    def emit(self, event: Event) -> None:
        """Broadcast an event; safe to call from any thread."""

    async def say(self, text: str, site_id: str | None = None) -> None:
        """Speak text at a site (a run of its own, events and all)."""

    async def listen(self, site_id: str | None = None) -> None:
        """Start listening at a site without a wake word."""

    def set_muted(self, muted: bool, site_id: str | None = None) -> None:
        """Stop or resume listening at a site."""

    def cancel(self, site_id: str | None = None) -> None:
        """Cancel the run in flight at a site (stops playback)."""

    def stage(self, kind: str, name: str | None = None) -> Any:
        """The loaded stage object of a kind (the first, or the one with that name)."""

    def call_threadsafe(self, coro: Any) -> None:
        """Schedule a coroutine on the daemon's loop from any thread."""


def new_run_id() -> str:
    return uuid.uuid4().hex


@dataclass
class RunContext:
    """One pass through the pipeline: from wake/speech start to the end of the answer."""

    site_id: str = "default"
    run_id: str = field(default_factory=new_run_id)
    language: str = "en"
    app: Assistant | None = None
    started: float = field(default_factory=time.monotonic)
    data: dict[str, Any] = field(default_factory=dict)
