"""Running a real pipeline in a test and collecting its events."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from voiced.daemon import prepare
from voiced.events import Event
from voiced.hookspecs import hookimpl
from voiced.pipeline import Pipeline


class EventRecorder:
    """A throwaway observer plugin: keeps every event it sees."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    @hookimpl
    def voiced_event(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.type == kind]

    def types(self, run_id: str | None = None) -> list[str]:
        return [str(e.type) for e in self.events if run_id is None or e.run_id == run_id]

    def runs(self) -> list[str]:
        """Run ids in order of their run-start."""
        return [e.run_id for e in self.of("run-start") if e.run_id]


# A light pipeline: real webrtc VAD, real Whisper (CT2), intents, no TTS model beyond Piper.
BASE: dict[str, Any] = {
    "pipeline": {
        "source": ["file"],
        "wake": [],
        "asr": ["whisper-ctranslate2"],
        "intent": ["hassil"],
        "handler": ["builtin", "responses"],
        "tts": ["piper"],
        "sink": [],
        "service": [],
    },
}


def overrides(**sections: Any) -> dict[str, Any]:
    from voiced.config import deep_merge

    return deep_merge(BASE, sections)


async def run_pipeline(
    config_overrides: dict[str, Any],
    extra: list[tuple[str, Any]] | None = None,
    config: str | Path | None = None,
) -> tuple[Pipeline, EventRecorder]:
    """Start a pipeline, run it until its file sources are done, stop it."""
    recorder = EventRecorder()
    settings, host = prepare(
        config or no_config_file(), config_overrides, [("recorder", recorder), *(extra or [])]
    )
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    try:
        await asyncio.wait_for(pipeline.run(), 240)
    finally:
        await pipeline.stop()
    return pipeline, recorder


@asynccontextmanager
async def started_pipeline(config_overrides: dict[str, Any]) -> AsyncIterator[Pipeline]:
    """A started pipeline (no config file, ``config_overrides``), stopped on leaving; its
    events are kept in ``pipeline.recorder``."""
    recorder = EventRecorder()
    settings, host = prepare(no_config_file(), config_overrides, [("recorder", recorder)])
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    pipeline.recorder = recorder
    try:
        yield pipeline
    finally:
        await pipeline.stop()


def no_config_file() -> Path:
    """An empty config file, so tests never pick up config/voiced.toml by accident."""
    path = Path(__file__).parent / "empty.toml"
    if not path.exists():
        path.write_text("# intentionally empty: tests pass their settings as overrides\n")
    return path
