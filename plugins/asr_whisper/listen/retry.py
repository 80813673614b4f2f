"""The prompted retry: the full window, the home's names as the prompt (../choose.py)."""

from __future__ import annotations

from ..choose import pick_retry
from ..common import FULL_WINDOW_S
from ..fallback import failure
from ..rescore import NOTHING_NEAR
from .state import Listening, Utterance, encode_window

WHY = "retry with the full window and the home's names: a command"
MISSED = "; the prompted retry gave no command close to it"


def prompted_retry(u: Utterance, s: Listening) -> str:
    """Decode the full window with the names as a prompt; kept only as a command needing no
    snapping close to a first reading. Not tried on ``sure_chatter``."""
    assert u.home is not None
    if sure_chatter(u, s):
        return "not tried: a reading Whisper is sure of, no sentence of this home near it"
    full = s.windows.get(FULL_WINDOW_S)
    if full is None:
        full = s.windows[FULL_WINDOW_S] = encode_window(u, FULL_WINDOW_S)
    s.retried = u.decoder.generate(
        full.encoded, u.seconds, FULL_WINDOW_S, u.language, u.home.prompt_words(), u.count
    ).hypotheses
    s.decision.retried = True
    won = pick_retry(s.retried, s.hypotheses, u.home, u.options.recognition.hypothesis_margin)
    if won is None:
        s.decision.why += MISSED
        return "no command close to the first reading"
    s.keep(won, "retry", WHY)
    return won.text


def sure_chatter(u: Utterance, s: Listening) -> bool:
    """A reading that passed Whisper's thresholds as decoded (nothing sampled) and that no
    sentence of the home is near, nor did the constrained search find one: chatter, which a
    retry would not turn into a command close to it. Only in a lean language
    (``state.LEAN_LANGUAGES``): Whisper base's sure, noisy German "Hürfne den Torran." was
    retried into "Öffne den Rollladen."."""
    far = (s.rescored or {}).get("why") == NOTHING_NEAR
    return far and u.lean and not s.fallback and failure(s.decode, u.options) is None
