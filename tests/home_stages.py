"""The intent stage on this repo's home, and the stage lookup an ASR engine asks it through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

HOME = Path(__file__).parents[1] / "config" / "home.yaml"


class App:
    """The daemon's stage lookup, all a home-aware ASR engine asks of it."""

    def __init__(self, intent: HassilIntent) -> None:
        self.intent = intent

    def stage(self, kind: str, name: str | None = None) -> HassilIntent | None:
        return self.intent if kind == "intent" else None


def home_hassil(**options: Any) -> HassilIntent:
    """hassil loaded on config/home.yaml (no extra sentence files), with ``options``."""
    stage = HassilIntent(HassilOptions(home=str(HOME), sentences=[], **options))
    stage.load()
    return stage
