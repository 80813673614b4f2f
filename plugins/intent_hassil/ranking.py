"""Which of hassil's matches of a sentence wins: hassil's ranking, with one more tie-break.

hassil ranks the matches of a sentence (``recognize_ranked``) and breaks a full tie by the
intent's name. German says "ein" both as the particle of "einschalten" and as the number
one, and Home Assistant's German templates read "Stehlampe ein" both ways, "<name> <an>"
(turn it on) and "<name> [auf] {brightness}" (brightness 1 %), tied: the name chose
``HassLightSet``, and "Ventilator ein" set the fan's speed to 1 %. Of matches tied but for
the name, the one that reads fewer of the sentence's words as numbers wins: a word that a
template says as a word is that word.
"""

from __future__ import annotations

import importlib
from typing import Any

import hassil

_ranked_score = getattr(importlib.import_module("hassil.recognize"), "_get_ranked_score", None)
"""hassil's ranking key (the package exports a function of the module's name)."""


def best_match(
    text: str, intents: Any, best_metadata_key: str, best_slot_name: str, **kwargs: Any
) -> Any | None:
    """hassil's best match of ``text`` (``recognize_best``'s arguments), of those tied
    with it but for the intent's name the one with fewest ``numbers_as_words``."""
    ranked_of = getattr(hassil, "recognize_ranked", None)
    if ranked_of is None or _ranked_score is None:  # an older hassil: its own best
        return hassil.recognize_best(
            text, intents, best_metadata_key=best_metadata_key,
            best_slot_name=best_slot_name, **kwargs,
        )  # fmt: skip
    ranked = ranked_of(
        text, intents, best_metadata_key=best_metadata_key, best_slot_name=best_slot_name,
        **kwargs,
    )  # fmt: skip
    if not ranked:
        return None

    def rank(result: Any) -> tuple[Any, ...]:  # hassil's, less the intent's name
        *order, (*score, _name) = _ranked_score(result, best_metadata_key, best_slot_name)
        return (*order, *score)

    first = rank(ranked[0])
    tied = [result for result in ranked if rank(result) == first]
    return min(tied, key=numbers_as_words)  # min is stable: hassil's order among equals


def numbers_as_words(result: Any) -> int:
    """How many of a match's number slots were said as words ("ein", "fünfzig"), not digits."""
    return sum(
        1
        for entity in result.entities_list
        if isinstance(entity.value, int | float)
        and not isinstance(entity.value, bool)
        and not any(c.isdigit() for c in entity.text or "")
    )
