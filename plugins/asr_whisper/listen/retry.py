"""The prompted retry: the full window, the home's names as the prompt (../choose.py)."""

from __future__ import annotations

from ..choose import pick_retry
from ..common import FULL_WINDOW_S
from .state import Listening, Utterance, Window

WHY = "retry with the full window and the home's names: a command"
MISSED = "; the prompted retry gave no command close to it"


def prompted_retry(u: Utterance, s: Listening) -> str:
    """Decode the full window with the names as a prompt; kept only as a command needing no
    snapping close to a first reading."""
    assert u.home is not None
    encoded = u.decoder.encode(u.samples, FULL_WINDOW_S)
    frames = min(FULL_WINDOW_S * 100, int(u.seconds * 100) + 1)
    s.windows.setdefault(FULL_WINDOW_S, Window(encoded, FULL_WINDOW_S, frames))
    s.retried = u.decoder.generate(
        encoded, u.seconds, FULL_WINDOW_S, u.language, u.home.prompt_words(), u.count
    ).hypotheses
    s.decision.retried = True
    won = pick_retry(s.retried, s.hypotheses, u.home, u.options.recognition.hypothesis_margin)
    if won is None:
        s.decision.why += MISSED
        return "no command close to the first reading"
    s.keep(won, "retry", WHY)
    return won.text
