"""What voiced's Wyoming ``transcript`` tells a front end of how it was recognized.

Added to the event's data as ``voiced`` (third-party clients read only ``text`` and
``language``): ``home`` says whether the recognizer asked this voiced's own home grammar (its
intent stage: ``used``; ``none``: it has no intent stage; ``unknown``: an engine that does not
record it), ``decision`` which step decided (voiced.api.recognition.Decision)."""

from __future__ import annotations

from typing import Any


def recognition_record(data: dict[str, Any]) -> dict[str, Any]:
    decision = data.get("decision")
    if not isinstance(decision, dict):
        return {"home": "unknown"}
    home = decision.get("home")
    return {"home": "unknown" if home is None else "used" if home else "none", "decision": decision}
