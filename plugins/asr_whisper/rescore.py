"""Listening again: this home's sentences near what was heard, scored against the audio.

When no hypothesis of the decoder is a command, the intent stage (``command_candidates``)
names the home's sentences a word or two away from them ("turn on the bedroom fan" for
"turn on the bedroom and"). Whisper's decoder then scores each one on the same audio (forced
decoding: the mean log-probability of its tokens), and so does the free reading it preferred.
A candidate wins only when

- it is a strict command on this home (``command_meaning``), the best-scored of those,
- it scores at most ``drop`` below the free reading (the audio nearly says it), and
- no candidate that means something else scores within ``separation`` of it.

Chatter is safe by the first two: the home's sentences nearest to it are words away and
score far below what Whisper heard (the tuning set's 36 chatter files: >= 5.9 nats a token).
The engine listens in the fitted window with ``DROP``; its optional second look, after a
prompted retry that found no command, in the full window with the stricter ``DROP_FULL``
(ct2.py, ``home_rescore_full``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

DROP = 1.5
"""Most mean log-probability a token a candidate may score below the free reading, on the
first look (the fitted window). Chosen on the tuning set: the right commands recovered lie
0.2-1.2 below, its 36 chatter files (24 near commands) nowhere nearer than 5.9, and 1.2-2.0
recover the same; 0.8 before."""
DROP_FULL = 0.8
"""The same limit on the second look, in the full window after the prompted retry found no
command: each look is one more chance to err. On the tuning set the right commands found
there lie -0.03-0.77 below, a wrong one ("lock" for a said "unlock") 0.95."""
SEPARATION = 0.3
"""Least lead the winner must have over a candidate with another meaning."""
CHECKS = 4
"""Best-scored candidates asked for their meaning (a strict match each: not free)."""


class Rescorer(Protocol):
    def command_candidates(self, texts: list[str]) -> list[str]: ...

    def command_meaning(self, text: str) -> Any: ...


def rescorer_of(checker: Any) -> Rescorer | None:
    """The intent stage, when it can name candidates and say what they mean."""
    if callable(getattr(checker, "command_candidates", None)) and callable(
        getattr(checker, "command_meaning", None)
    ):
        return checker
    return None


@dataclass(frozen=True)
class Rescored:
    text: str
    score: float
    free_score: float
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "score": round(self.score, 3),
            "free_score": round(self.free_score, 3),
            "why": self.why,
        }


def pick_rescored(
    heard: list[str],
    rescorer: Rescorer,
    score: Callable[[list[str]], list[float]],
    drop: float = DROP,
    separation: float = SEPARATION,
    references: list[str] | None = None,
) -> tuple[Rescored | None, str]:
    """The home's sentence the audio says, by the rules above, and why (or why none).
    ``references``: the free readings to measure against (the best-scored counts; default
    the top one of ``heard``)."""
    candidates = [c for c in rescorer.command_candidates(heard) if c.strip()]
    if not candidates:
        return None, "no sentence of this home near what was heard"
    free_texts = references or heard[:1]
    scores = score([*free_texts, *candidates])
    free = max(scores[: len(free_texts)])
    ranked = sorted(zip(scores[len(free_texts) :], candidates, strict=True), reverse=True)
    winner: tuple[float, str, Any] | None = None
    for value, text in ranked[:CHECKS]:
        if winner is not None and winner[0] - value >= separation:
            break
        meaning = rescorer.command_meaning(text)
        if meaning is None:
            continue
        if winner is None:
            winner = (value, text, meaning)
        elif meaning != winner[2]:
            return None, f"{winner[1]!r} and {text!r} score alike and mean different things"
    if winner is None:
        return None, f"none of the {len(candidates)} nearest sentences is a command here"
    value, text, _ = winner
    if free - value > drop:
        return None, f"{text!r} scores {free - value:.2f} below what was heard (most {drop})"
    why = f"{text!r}: best of {len(candidates)} home sentences, {free - value:.2f} below"
    return Rescored(text, value, free, why), why


def forced_scores(
    model: Any, tokenizer: Any, encoded: Any, texts: list[str], frames: int
) -> list[float]:
    """Mean log-probability of each text's tokens given the audio (CTranslate2 Whisper
    ``align``: one decoder pass over the batch, teacher-forced)."""
    import ctranslate2
    import numpy as np

    tokens = [tokenizer.encode(" " + text.strip()) or [tokenizer.eot] for text in texts]
    if getattr(encoded, "device", "cpu") != "cpu":  # one copy per text, built on the host
        encoded = encoded.to_device(ctranslate2.Device.cpu)
    batch = np.repeat(np.asarray(encoded), len(tokens), axis=0)
    view = ctranslate2.StorageView.from_array(np.ascontiguousarray(batch))
    results = model.align(view, list(tokenizer.sot_sequence), tokens, frames)
    return [
        float(np.mean(np.log(np.maximum(np.asarray(r.text_token_probs), 1e-9)))) for r in results
    ]
