"""The hook contract between the core and its plugins."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from voiced.context import RunContext
    from voiced.events import Event
    from voiced.intents import Intent, Response, Transcript

hookspec = pluggy.HookspecMarker("voiced")
hookimpl = pluggy.HookimplMarker("voiced")


@hookspec
def voiced_register_stages(register: Callable[..., None]) -> None:
    """Offer stages: ``register(kind, name, factory, options=Model, description=...)``."""


@hookspec(firstresult=True)
def voiced_recognize(transcript: Transcript, context: RunContext) -> Intent | None:
    """Turn a transcript into an intent; the first non-None answer wins."""


@hookspec(firstresult=True)
def voiced_handle(intent: Intent, context: RunContext) -> Response | None:
    """Act on an intent and say what to answer; the first non-None answer wins."""


@hookspec
def voiced_event(event: Event) -> None:
    """Observe every pipeline event; must not block (enqueue and return)."""


@hookspec
def voiced_register_commands(add_command: Callable[..., Any]) -> None:
    """Add CLI subcommands: ``add_command(name, help, configure_parser, run)``."""


@hookspec
def voiced_doctor_checks(config: Any) -> list[Any]:
    """Return ``voiced.doctor.Check`` results for ``voiced doctor``."""
