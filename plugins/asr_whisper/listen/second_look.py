"""The second look: after a retry that found no command, rescoring what both decodes read,
in the full window (``recognition.rescore_full``) or again in the fitted one."""

from __future__ import annotations

from ..common import FULL_WINDOW_S
from .rescoring import rescore
from .state import Listening, Utterance


def second_look(u: Utterance, s: Listening) -> str:
    """Rescore the readings of both decodes (noise and long commands read better in the full
    window: issue #15). Not tried where the retry was not (nothing new to rescore)."""
    if not s.retried:
        return "not tried: no reading of the retry"
    heard = [*s.hypotheses, *s.retried]
    if u.options.recognition.rescore_full:
        found = rescore(u, s, heard, [*s.retried, *s.hypotheses], s.windows[FULL_WINDOW_S])
    else:
        found = rescore(u, s, heard, s.hypotheses, s.window)
    if found is None:
        return (s.rescored or {}).get("why", "none")
    s.keep(found, "second_look")
    return found.text
