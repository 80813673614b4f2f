"""The hook contract between the core and its plugins.

Each spec says what it takes and returns, whether the first non-None result wins
(``firstresult``), which thread calls it, and how long it may take.

Order: implementations of one hook run in the order plugins were registered (built-ins in
``voiced.plugins.BUILTIN_ORDER``, then entry points, then stage objects in the order of their
``pipeline.*`` list), with ``tryfirst``/``trylast`` moving an implementation to the front or
the back, as in pytest.

Wrappers: ``voiced_recognize`` and ``voiced_handle`` are called through pluggy, so
``@hookimpl(wrapper=True)`` works there as in pytest. ``voiced_register_stages``,
``voiced_event`` and ``voiced_doctor_checks`` are called one implementation at a time (each
needs to know which plugin answered, or must not be silenced by another's exception); a
wrapper of those is rejected at start-up with a message saying so
(``voiced.plugins.check_hooks``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from voiced.config import Settings
    from voiced.context import RunContext
    from voiced.doctor.checks import Check
    from voiced.events import Event
    from voiced.intents import Intent, Response, Transcript

hookspec = pluggy.HookspecMarker("voiced")
hookimpl = pluggy.HookimplMarker("voiced")

ONE_AT_A_TIME = ("voiced_register_stages", "voiced_event", "voiced_doctor_checks")
"""Hooks voiced calls implementation by implementation; wrappers of these are rejected."""


@hookspec
def voiced_register_stages(register: Callable[..., None]) -> None:
    """Offer stages: ``register(kind, name, factory, options=Model, description=...,
    shorthand=...)``; ``factory(options, app) -> stage``.

    Called once per plugin at start-up (and by ``voiced plugins``), in the main thread, before
    the event loop runs. Fast: no model loading here (that is the stage's ``load()``).
    No wrappers.
    """


@hookspec(firstresult=True)
def voiced_recognize(transcript: Transcript, context: RunContext) -> Intent | None:
    """Turn a transcript into an intent; the first non-None answer wins (``firstresult``).

    Called in a worker thread of the daemon's executor, once per run, bounded by
    ``pipeline.stage_timeout`` (a timeout is an ``error`` event; the run ends ``error``).
    A recognizer that declines may append its reason to ``context.data["intent_errors"]``
    (a list of ``{"recognizer": ..., "reason": ...}``); they are reported in
    ``intent-not-recognized``. Wrappers allowed.
    """


@hookspec(firstresult=True)
def voiced_handle(intent: Intent, context: RunContext) -> Response | None:
    """Act on an intent and say what to answer; the first non-None answer wins.

    Worker thread, bounded by ``pipeline.stage_timeout``, like ``voiced_recognize``. None from
    every handler answers ``voiced.run.CANNOT_DO``. Wrappers allowed.
    """


@hookspec
def voiced_event(event: Event) -> None:
    """Observe every event (payloads: ``voiced.events``).

    Called on the daemon's event loop thread (``app.emit`` from another thread hops there),
    one observer at a time; an observer that raises is logged and the others still run.
    Must not block: enqueue and return. No wrappers.
    """


@hookspec
def voiced_register_commands(add_command: Callable[..., Any]) -> None:
    """Add CLI subcommands: ``add_command(name, help, configure_parser, run)``.

    Main thread, when the command line is parsed, before any daemon exists.
    """


@hookspec
def voiced_doctor_checks(config: Settings) -> list[Check]:
    """Return ``voiced.doctor.Check`` results for ``voiced doctor``.

    Main thread, no event loop; each plugin's checks run on their own (one that raises is
    reported as a failed check). Keep each network probe to a few seconds. No wrappers.
    """
