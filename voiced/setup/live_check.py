"""The live check: the written config runs for real and one spoken command is followed
stage by stage ("say 'okay nabu, what time is it'"), each stage with its verdict."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

from voiced.events import Event
from voiced.hookspecs import hookimpl
from voiced.setup.console import Console
from voiced.setup.home_assistant import plural


class _Events:
    """An observer plugin: every event of the check, and the end of the first run."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.ended = asyncio.Event()

    @hookimpl
    def voiced_event(self, event: Event) -> None:
        self.events.append(event)
        if event.type == "run-end":
            self.ended.set()

    def first(self, kind: str) -> Event | None:
        return next((e for e in self.events if e.type == kind), None)


@dataclass(frozen=True)
class Verdict:
    """One stage's outcome: ok True (✓), False (✗) or None (not reached)."""

    stage: str
    ok: bool | None
    detail: str


def verdicts(seen: _Events, wake_words: list[str]) -> list[Verdict]:
    """What each stage did with the one command, in the order they run."""
    wake, end = seen.first("wake"), seen.first("vad-end")
    transcript, intent = seen.first("transcript"), seen.first("intent")
    missed, handled = seen.first("intent-not-recognized"), seen.first("handled")
    spoken = seen.first("tts-end") or seen.first("playback-end")
    errors = [str(e.data.get("message", "")) for e in seen.events if e.type == "error"]
    found = [
        Verdict("wake word", bool(wake) if wake_words else None,
                f"heard {wake.data.get('name')}" if wake else
                (f"not heard ({' or '.join(wake_words)}): speak closer, or check the level"
                 if wake_words else "none configured")),
        Verdict("speech", bool(end), "a command ended" if end else "no command heard"),
        Verdict("transcript", bool(transcript and transcript.data.get("text")),
                repr(transcript.data.get("text")) if transcript else "nothing transcribed"),
        Verdict("intent", bool(intent), str(intent.data.get("name")) if intent else
                ("not recognized" if missed else "not reached")),
        Verdict("answer", bool(handled), repr(handled.data.get("speech")) if handled
                else "no handler answered"),
        Verdict("spoken answer", bool(spoken), "played" if spoken else "not played"),
    ]  # fmt: skip
    return found + service_verdicts(seen, errors)


def service_verdicts(seen: _Events, errors: list[str]) -> list[Verdict]:
    """The home Home Assistant gave (when it did), and every error of the check."""
    found = []
    home = seen.first("home")
    if home is not None:
        data = home.data
        areas = plural(int(data.get("areas") or 0), "area")
        entities = plural(int(data.get("entities") or 0), "entity", "entities")
        found.append(Verdict("home", data.get("source") == "home-assistant",
                             f"from {data.get('source')}: {areas}, {entities}"))  # fmt: skip
    return found + [Verdict("error", False, error) for error in errors]


async def _listen(config: Path, console: Console, prompt: str, seconds: float) -> _Events:
    from voiced.daemon import prepare
    from voiced.pipeline import Pipeline

    seen = _Events()
    settings, host = prepare(config, extra_plugins=[("setup-live-check", seen)])
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    stop = asyncio.Event()
    try:
        console.say(f"\nNow say: {prompt}   (listening for {seconds:.0f} s)")
        runner = asyncio.create_task(pipeline.run(stop))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(seen.ended.wait(), seconds)
        stop.set()
        await runner
    finally:
        await pipeline.stop()
    return seen


def live_check(config: Path, console: Console, wake_words: list[str], seconds: float) -> bool:
    """Run the config, ask for one spoken command, print each stage's verdict; all ✓?"""
    console.heading("Live check")
    wake = wake_words[0].replace("_", " ") + ", " if wake_words else ""
    prompt = f"'{wake}what time is it'"
    try:
        seen = asyncio.run(_listen(config, console, prompt, seconds))
    except Exception as exc:
        console.fail(f"voiced could not start with this config: {type(exc).__name__}: {exc}")
        return False
    results = verdicts(seen, wake_words)
    for verdict in results:
        line = f"{verdict.stage}: {verdict.detail}"
        if verdict.ok is None:
            console.say(f"  - {line}")
        elif verdict.ok:
            console.ok(line)
        else:
            console.fail(line)
    return all(v.ok is not False for v in results)
