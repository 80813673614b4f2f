"""What a remote ASR service did with the home, for the transcript's data.

Another voiced recognizes with its own home (its intent stage: from Home Assistant or its
home file) and says so in its transcript event (``voiced``: ``home``, ``decision``); a
third-party service such as ``wyoming-faster-whisper`` cannot score sentences, so every step
that asks the home was skipped there, and the data says which and why (``without_home``).
"""

from __future__ import annotations

from typing import Any

from voiced.api.recognition import without_home

SAID = ("used", "none", "unknown")


def recognized_by(event_data: dict[str, Any], program: str | None) -> dict[str, Any]:
    """``home`` (its ``status`` and whose home), the remote's ``decision`` when it sent one,
    and ``without_home`` when the home's steps did not run there."""
    record = event_data.get("voiced")
    if not isinstance(record, dict) or record.get("home") not in SAID:
        service = program or "the remote service"
        return {
            "home": {"status": "none", "by": service},
            "without_home": without_home(
                f"{service} is no voiced: it cannot score sentences, so it transcribes "
                "without this home"
            ),
        }
    out: dict[str, Any] = {"home": {"status": record["home"], "by": "the remote voiced's own"}}
    if isinstance(record.get("decision"), dict):
        out["decision"] = record["decision"]
    if record["home"] == "none":
        out["without_home"] = without_home(
            'the remote voiced has no intent stage: give it intent = ["hassil"] and the home'
        )
    return out
