"""Split an answer into sentences so speech synthesis can start on the first one early.

Sentence ends are ``. ! ? …`` (and the CJK ``。！？``) followed by a space or the end; a blank
line ends a paragraph. A period after a known abbreviation (Mr., Dr., e.g., a.m.) is not an
end, and ``3.5`` or ``10:30`` never are, because no space follows. A sentence longer than
``max_chars`` is cut at the weakest boundary that makes it fit: line breaks, then ``; :``,
then commas and dashes, then spaces, and as a last resort inside a word, so no piece ever
exceeds ``max_chars`` and one synthesis call stays bounded in time and memory.

:func:`lead_clause` cuts a long first sentence at its first clause boundary, so the first
audio of an answer is made from a few words (a Piper voice makes a whole piece in one call).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# Never a sentence end: titles and the like, always followed by more of the sentence.
_TITLES = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "vs", "cf", "rev", "gen",
     "lt", "sgt", "capt", "gov", "approx", "e.g", "i.e"}
)  # fmt: skip
# Not a sentence end before a number ("No. 5", "Fig. 3"), but "The answer is no." ends.
_NUMBERED = frozenset({"no", "nos", "vol", "fig", "p", "pp", "op"})
# A sentence end only when a capitalised word follows ("at 7 a.m. Then ..." ends, "7 a.m. today"
# does not).
_TRAILING = frozenset(
    {"etc", "a.m", "p.m", "am", "pm", "inc", "ltd", "co", "corp", "jan", "feb", "mar", "apr",
     "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec"}
)  # fmt: skip
_DOTTED = re.compile(r"^(?:[a-z]\.)+[a-z]$")  # u.s, e.g, a.m, u.s.a

_END = re.compile(r"[.!?…]+[\"'”’»)\]]*(?=\s|$)|[。！？]+[\"'”’」』)]*")
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_SPACE = re.compile(r"\s+")
_NEXT_VISIBLE = re.compile(r"\S")
# Weaker and weaker places to cut an over-long sentence (the delimiter stays on the left).
# Chinese and Japanese write no space after their full-width marks.
_CUTS = (
    re.compile(r"\s*\n\s*"),
    re.compile(r"(?<=[;:])\s+|(?<=[；：])\s*"),
    re.compile(r"(?<=[,—–])\s+|\s+(?=[—–]\s)|(?<=[，、])\s*"),
    re.compile(r"\s+"),
)
_CJK_MARK = "；：，、"
MIN_MAX_CHARS = 10
LEAD_CHARS = 40  # a first sentence longer than this is cut at its first clause boundary
_CLAUSE = re.compile(r"(?<=[,;:—–])\s+|(?<=[，、；：])\s*")


def split_sentences(text: str, max_chars: int = 300) -> list[str]:
    """Text -> sentences to speak one by one, each at most ``max_chars`` characters.

    Empty or whitespace-only text gives ``[]``; pieces with nothing to say (no letter or
    digit, e.g. a lone "...") are dropped.
    """
    return list(iter_sentences(text, max_chars))


def iter_sentences(text: str, max_chars: int = 300) -> Iterator[str]:
    """Like :func:`split_sentences`, lazily: the first sentence is ready before the rest."""
    if max_chars < MIN_MAX_CHARS:
        raise ValueError(f"max_chars must be at least {MIN_MAX_CHARS}, got {max_chars}")
    for paragraph in _PARAGRAPH.split(text):
        for sentence in _sentences(paragraph):
            for piece in _fit(sentence, max_chars, 0):
                piece = _SPACE.sub(" ", piece).strip()
                if any(ch.isalnum() for ch in piece):
                    yield piece


def lead_clause(sentences: list[str], max_chars: int = LEAD_CHARS) -> list[str]:
    """``sentences`` with the first one cut after its first clause (``, ; : —``) when it is
    longer than ``max_chars`` and the clause has at least two words: "Sorry, ..." stays whole.
    Nothing is lost or reordered; the cut only decides where synthesis pauses first."""
    if not sentences or len(sentences[0]) <= max_chars:
        return sentences
    first = sentences[0]
    for match in _CLAUSE.finditer(first):
        head, rest = first[: match.start()].strip(), first[match.end() :].strip()
        if len(head.split()) >= 2 and any(ch.isalnum() for ch in rest):
            return [head, rest, *sentences[1:]]
    return sentences


def _sentences(paragraph: str) -> Iterator[str]:
    start = 0
    for match in _END.finditer(paragraph):
        single_period = match.group().rstrip("\"'”’»)]") == "."
        if single_period and not _ends_sentence(paragraph, match.start(), match.end()):
            continue
        yield paragraph[start : match.end()]
        start = match.end()
    if start < len(paragraph):
        yield paragraph[start:]


def _ends_sentence(text: str, dot: int, after: int) -> bool:
    """Is the single period at ``dot`` a sentence end, or part of an abbreviation?"""
    word_start = dot
    while word_start > 0 and not text[word_start - 1].isspace():
        word_start -= 1
    word = text[word_start:dot].lstrip("\"'“‘«([").lower()
    if not word:
        return True
    if word in _TITLES:
        return False
    # Only the next visible character matters: slicing the rest of the text here made
    # splitting quadratic ("a. " * 300_000 stalled the event loop for a minute and more).
    found = _NEXT_VISIBLE.search(text, after)
    following = text[found.start()] if found else ""
    if word in _NUMBERED:
        return not following.isdigit()
    if word in _TRAILING or _DOTTED.match(word):
        return not following.islower()
    return True


def _fit(piece: str, max_chars: int, level: int) -> Iterator[str]:
    """Cut a piece at the weakest boundary of ``level`` or weaker until every part fits."""
    if len(piece.strip()) <= max_chars:
        yield piece
        return
    if level >= len(_CUTS):
        piece = piece.strip()
        for i in range(0, len(piece), max_chars):
            yield piece[i : i + max_chars]
        return
    current = ""
    for part in _CUTS[level].split(piece.strip()):
        if not part:
            continue
        joined = f"{current}{_joint(current)}{part}" if current else part
        if len(joined) <= max_chars:
            current = joined
            continue
        if current:
            yield current
        if len(part) <= max_chars:
            current = part
        else:
            yield from _fit(part, max_chars, level + 1)
            current = ""
    if current:
        yield current


def _joint(left: str) -> str:
    """What goes between two parts put back together: nothing after a full-width mark."""
    return "" if left[-1:] in _CJK_MARK else " "
