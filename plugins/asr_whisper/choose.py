"""Choosing what was said among the decoder's hypotheses, with what the home knows.

Whisper does not know the home; the intent stage does. An intent stage that offers
``is_command(text) -> bool`` (and ``prompt_words() -> str``) lets the engine

- pick, from its N-best list, the best hypothesis that is a command on this home, as long
  as its score is within ``margin`` of the top one (else the top one goes on as free text);
- when no hypothesis is a command, decode once more with the full 30 s window and the home's
  names as a prompt, and take that decode only if it is a command needing no name snapping
  and says nearly what the first decode said (so a prompt cannot turn chatter into an
  action, nor "is the back door locked" heard as "and the mac log" into "Mark Door Lock").
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from voiced.api.recognition import HomeGrammar, Hypothesis, home_grammar

RETRY_SIMILARITY = 0.6
"""How close (characters, normalized) the prompted retry must stay to the first decode."""


CommandChecker = HomeGrammar
"""The home grammar's first two questions (``is_command``, ``prompt_words``)."""

__all__ = ["Choice", "CommandChecker", "Hypothesis", "checker_of", "choose", "pick_retry"]


@dataclass(frozen=True)
class Choice:
    index: int
    why: str
    command: bool = False


def checker_of(app: Any, language: str | None = None) -> CommandChecker | None:
    """The app's intent stage (its grammar of ``language`` where it has several), when it can
    tell a command from other speech."""
    stage = getattr(app, "stage", None)
    return home_grammar(stage("intent") if callable(stage) else None, language)


def choose(hypotheses: list[Hypothesis], checker: CommandChecker | None, margin: float) -> Choice:
    """The hypothesis to go on with (they come best first)."""
    if checker is None:
        return Choice(0, "top hypothesis (no intent stage to ask)")
    top = hypotheses[0].avg_logprob
    for index, hypothesis in enumerate(hypotheses):
        if top - hypothesis.avg_logprob > margin:
            break
        if checker.is_command(hypothesis.text):
            if index == 0:
                return Choice(0, "top hypothesis is a command", True)
            return Choice(
                index,
                f"hypothesis {index} is a command on this home, "
                f"{top - hypothesis.avg_logprob:.2f} below the top (margin {margin})",
                True,
            )
    return Choice(0, "no hypothesis within the margin is a command: top one as free text")


def pick_retry(
    retried: list[Hypothesis],
    first: list[Hypothesis],
    checker: CommandChecker,
    margin: float,
) -> Hypothesis | None:
    """The best hypothesis of the prompted retry (within ``margin`` of its top one) that is a
    command needing no name snapping and re-reads one of the first decode's hypotheses."""
    if not retried:
        return None
    top = retried[0].avg_logprob
    for hypothesis in retried:
        if top - hypothesis.avg_logprob > margin:
            break
        if checker.is_command(hypothesis.text, exact=True) and any(
            close_enough(before.text, hypothesis.text) for before in first
        ):
            return hypothesis
    return None


def close_enough(first: str, retry: str) -> bool:
    """Whether the prompted retry is a re-reading of the same speech, not a new sentence."""
    a, b = _norm(first), _norm(retry)
    return bool(a and b) and difflib.SequenceMatcher(None, a, b).ratio() >= RETRY_SIMILARITY


def unique(hypotheses: list[Hypothesis]) -> list[Hypothesis]:
    """Hypotheses that differ in words (beam search often ends in the same text twice)."""
    seen: set[str] = set()
    out = []
    for hypothesis in hypotheses:
        key = _norm(hypothesis.text)
        if key not in seen:
            seen.add(key)
            out.append(hypothesis)
    return out


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w' ]", " ", text.lower()).split())
