"""The intent stage on this repo's home, and the stage lookup an ASR engine asks it through."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

from voiced.config import Settings

HOME = Path(__file__).parents[1] / "config" / "home.yaml"
MULTILINGUAL_HOME = Path(__file__).parent / "homes" / "multilingual.yaml"


class App:
    """The daemon's stage lookup, all a home-aware ASR engine asks of it."""

    def __init__(self, intent: HassilIntent) -> None:
        self.intent = intent

    def stage(self, kind: str, name: str | None = None) -> HassilIntent | None:
        return self.intent if kind == "intent" else None


class SentencesHome:
    """The home as the rescorer asks it (``rescore.Rescorer``): its sentences and their
    meanings, given outright, so a scoring rule is tested on its own."""

    def __init__(self, meanings: dict[str, str]) -> None:
        self.meanings = meanings

    def command_candidates(self, texts: list[str]) -> list[str]:
        return list(self.meanings)

    def command_meaning(self, text: str) -> str | None:
        return self.meanings.get(text)


def home_hassil(home: Path = HOME, language: str | None = None, **options: Any) -> HassilIntent:
    """hassil loaded on ``home`` (config/home.yaml; no extra sentence files), with
    ``options``; with ``language``, for a daemon whose config speaks it."""
    app = None if language is None else SimpleNamespace(settings=Settings(language=language))
    stage = HassilIntent(HassilOptions(home=str(home), sentences=[], **options), app)
    stage.load()
    return stage


@contextmanager
def loaded(engines: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``engines`` (name: ASR engine) loaded, and closed again when done."""
    for engine in engines.values():
        engine.load()
    try:
        yield engines
    finally:
        for engine in engines.values():
            engine.close()
