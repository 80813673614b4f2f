"""``voiced doctor``: can the ge2e speaker stage load, and can the voices file be read."""

from __future__ import annotations

from typing import Any

from voiced.api.doctor import Check

from .checkpoint import CheckpointError, read_checkpoint
from .encoder import INSTALL, bundled_weights


def speaker_checks(config: Any) -> list[Check]:
    """Only when ``pipeline.speaker`` names ge2e: the weights, then the voices file."""
    if "ge2e" not in config.pipeline.speaker:
        return []
    from voiced.api.speakers import VoiceBook, VoiceBookError, voices_path

    checks = []
    try:
        path = bundled_weights()
        read_checkpoint(path)
        checks.append(Check("speaker encoder ge2e", True, str(path), section="models"))
    except (RuntimeError, CheckpointError, OSError) as exc:
        checks.append(Check("speaker encoder ge2e", False, str(exc), fix=INSTALL, section="models"))
    voices = voices_path(config.speakers)
    try:
        book = VoiceBook.open(voices, "ge2e")
    except VoiceBookError as exc:
        fix = "fix or remove the file, then `voiced speakers enroll NAME` again"
        checks.append(Check("enrolled voices", False, str(exc), fix=fix, section="models"))
        return checks
    names = ", ".join(book.names()) or "none yet (`voiced speakers enroll NAME`)"
    ok = True if book.voices else None
    checks.append(Check("enrolled voices", ok, f"{names} ({voices})", section="models"))
    return checks
