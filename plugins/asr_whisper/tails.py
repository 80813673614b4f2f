"""A sentence's tail after a misheard first word: searched, then completed with the home's
first words.

The constrained search (constrained.py) reads a sentence from its first token on, so one
the decoder hears first as something else leaves its beam at once ("Liechne ist es." for
"Wie spät ist es?": " sp" at a log-probability of -8.5), though it scores as well as the
free reading once whole. Here the decoder is held to the free reading's first word and the
search finds the rest from any word of the home's graph ("ist es"); the first words of the
home's sentences that go on so on one template are put before it, the likeliest for the
audio's first token first ("wie spät ist es", "wieviel uhr ist es"). The rescoring judges
them against the audio as every other candidate (listen/rescoring.py runs this only where
it took no command). In languages written with spaces.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from voiced.api.recognition import NextLogprobs

from .constrained import (
    ANY,
    END,
    END_FLOOR,
    NUMBER,
    OPENING,
    START,
    Found,
    TokenGrammar,
    _found,
    _opens_one_template,
    commands_of,
    constrained_decode,
    first_token_fit,
    grounded,
    search_length,
)

PER_TAIL = 4
"""Commands made of one found tail: its likeliest first words (docs/asr.md, "Tuned
constants")."""
CHECKS = 32
"""Sentences made of one tail asked their meaning at most (a strict match each, ≈ 4 ms;
"ein" goes on a thousand ways in German)."""


def tail_commands(
    steps: NextLogprobs,
    tokenizer: Any,
    grammar: TokenGrammar,
    heard: list[tuple[str, float]],
    rescorer: Any,
    beam: int,
) -> Found | None:
    """The home's commands whose tail the audio says after the first word of the best
    reading (``heard``: the free readings, best first, with their mean log-probabilities),
    those a reading grounds first; None where there is no such reading or command."""
    words = heard[0][0].split() if heard else []
    if len(words) < 2 or not grammar.spaced:
        return None
    first = steps([*tokenizer.sot_sequence, tokenizer.no_timestamps], [()])[0]
    likely, is_command = first_token_fit(grammar, first), commands_of(rescorer)
    found = constrained_decode(
        steps,
        tokenizer,
        grammar,
        beam=beam,
        max_tokens=search_length(tokenizer, heard),
        free_logprob=heard[0][1],
        after=tuple(tokenizer.encode(" " + words[0])),
    )
    made = [
        text
        for tail in found
        if tail.end_logprob >= END_FLOOR
        for text in completed(grammar, tail.sentence, likely, is_command)
    ]
    if not made:
        return None
    readings = [text for text, _ in heard]
    said = [text for text in made if grounded(text, readings)]
    return _found(said, made, lambda texts: [])


def completed(
    grammar: TokenGrammar,
    tail: str,
    likely: Callable[[str], float],
    is_command: Callable[[str], bool],
    per_tail: int = PER_TAIL,
) -> list[str]:
    """The ``per_tail`` commands that put one or two words opening the home's sentences
    before ``tail``, on one template with its first words, the likeliest first word for the
    audio's first token first; of the first ``CHECKS`` such sentences."""
    words = tail.split()
    if not words:
        return []
    keys = [_key(grammar, word) for word in words]
    befores = sorted(_befores(grammar, keys[0]), key=lambda before: -likely(before[0]))
    made = (
        " ".join([*before, *words])
        for before in befores
        if _opens_one_template(grammar, [START, *before, *keys[:OPENING]])
    )
    asked = itertools.islice(_unique(made), CHECKS)
    return list(itertools.islice(filter(is_command, asked), per_tail))


def _unique(texts: Iterable[str]) -> Iterator[str]:
    seen: set[str] = set()
    for text in texts:
        if text not in seen:
            seen.add(text)
            yield text


def _befores(grammar: TokenGrammar, first: str) -> Iterator[tuple[str, ...]]:
    """The graph's one or two words from a sentence's start that ``first`` may follow."""
    for word in sorted(grammar.following.get(START, set()) - {END, NUMBER, ANY}):
        after = grammar.following.get(word, set())
        if first in after:
            yield (word,)
        for second in sorted(after - {END, NUMBER, ANY}):
            if first in grammar.following.get(second, ()):
                yield (word, second)


def _key(grammar: TokenGrammar, word: str) -> str:
    """``word`` as the graph keys it: casefolded, a number as ``NUMBER``."""
    key = word.casefold().strip(",.?!")
    if key not in grammar.following and (key.isdigit() or key in grammar.numbers):
        return NUMBER
    return key
