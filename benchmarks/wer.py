"""Word error rate on normalized text.

Whisper writes "Set a timer for 5 minutes." where the test set says "set a timer for five
minutes": both sides are normalized the same way first (case, punctuation, digits to words,
a few contractions), so WER counts words heard wrong, not formatting.

The count itself uses jiwer (PyPI ``jiwer``) when installed; a plain word-level Levenshtein
gives the same numbers without it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

ONES = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
ORDINALS = {
    "1st": "first", "2nd": "second", "3rd": "third", "4th": "fourth", "5th": "fifth",
    "6th": "sixth", "7th": "seventh", "8th": "eighth", "9th": "ninth", "10th": "tenth",
}  # fmt: skip
CONTRACTIONS = {
    "what's": "what is", "it's": "it is", "that's": "that is", "i'm": "i am",
    "don't": "do not", "can't": "cannot", "let's": "let us", "there's": "there is",
    "how's": "how is", "where's": "where is", "o'clock": "oclock",
}  # fmt: skip
SYMBOLS = {"%": " percent ", "°": " degrees ", "&": " and ", "+": " plus "}


def number_words(n: int) -> str:
    """0..999,999,999 in words, as people say them ("twenty one", "one hundred five")."""
    if n < 0:
        return "minus " + number_words(-n)
    if n < 20:
        return ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return TENS[tens] + ("" if ones == 0 else " " + ONES[ones])
    for size, name in ((1_000_000, "million"), (1000, "thousand"), (100, "hundred")):
        if n >= size:
            head, rest = divmod(n, size)
            if head >= 1000 and size == 1_000_000:
                raise ValueError(f"number too large to say: {n}")
            return number_words(head) + " " + name + ("" if rest == 0 else " " + number_words(rest))
    raise AssertionError("unreachable")


def _say_number(match: re.Match[str]) -> str:
    text = match.group(0).replace(",", "")
    if ":" in text:  # a time: 5:30 -> five thirty, 7:00 -> seven, 7:05 -> seven oh five
        hours, minutes = (int(p) for p in text.split(":"))
        if minutes == 0:
            return f" {number_words(hours)} "
        tail = number_words(minutes) if minutes >= 10 else "oh " + number_words(minutes)
        return f" {number_words(hours)} {tail} "
    if "." in text:
        whole, frac = text.split(".", 1)
        return f" {number_words(int(whole or 0))} point {' '.join(ONES[int(d)] for d in frac)} "
    return f" {number_words(int(text))} "


NUMBER = re.compile(r"\d+:\d{2}|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")


def normalize(text: str) -> str:
    """Lowercase words only: digits spelled out, punctuation gone, contractions expanded."""
    text = text.lower().replace("’", "'")
    for ordinal, word in ORDINALS.items():
        text = re.sub(rf"\b{ordinal}\b", word, text)
    for symbol, word in SYMBOLS.items():
        text = text.replace(symbol, word)
    text = NUMBER.sub(_say_number, text)
    text = re.sub(r"[-‐–—/]", " ", text)
    words = []
    for word in text.split():
        word = word.strip(".,!?;:\"()[]{}…'")
        word = CONTRACTIONS.get(word, word)
        word = re.sub(r"[^\w' ]", "", word).replace("'", "")
        if word:
            words.append(word)
    return " ".join(words)


@dataclass(frozen=True)
class WerResult:
    wer: float  # (substitutions + deletions + insertions) / reference words
    errors: int
    words: int  # reference words
    sentences: int
    engine: str  # "jiwer" or "levenshtein"

    def to_dict(self) -> dict[str, float | int | str]:
        return {
            "wer": self.wer,
            "errors": self.errors,
            "words": self.words,
            "sentences": self.sentences,
            "engine": self.engine,
        }


def edit_distance(reference: Sequence[str], hypothesis: Sequence[str]) -> int:
    """Word-level Levenshtein distance (substitutions, deletions, insertions all cost 1)."""
    previous = list(range(len(hypothesis) + 1))
    for i, ref_word in enumerate(reference, 1):
        current = [i]
        for j, hyp_word in enumerate(hypothesis, 1):
            current.append(
                min(
                    previous[j] + 1,  # deletion
                    current[j - 1] + 1,  # insertion
                    previous[j - 1] + (ref_word != hyp_word),  # substitution / match
                )
            )
        previous = current
    return previous[-1]


def word_error_rate(
    references: Sequence[str], hypotheses: Sequence[str], use_jiwer: bool = True
) -> WerResult:
    """Corpus WER over sentence pairs, after ``normalize`` on both sides."""
    if len(references) != len(hypotheses):
        raise ValueError(
            f"{len(references)} references but {len(hypotheses)} hypotheses: "
            "pass one hypothesis per reference (an empty string for nothing heard)"
        )
    refs = [normalize(r) for r in references]
    hyps = [normalize(h) for h in hypotheses]
    words = sum(len(r.split()) for r in refs)
    if words == 0:
        raise ValueError("the references hold no words: WER is undefined")
    if use_jiwer:
        try:
            import jiwer  # noqa: F401
        except ImportError:
            use_jiwer = False
    if use_jiwer:
        errors = _jiwer_errors(refs, hyps)
        engine = "jiwer"
    else:
        errors = sum(edit_distance(r.split(), h.split()) for r, h in zip(refs, hyps, strict=True))
        engine = "levenshtein"
    return WerResult(errors / words, errors, words, len(refs), engine)


def _jiwer_errors(refs: list[str], hyps: list[str]) -> int:
    """Word errors (substitutions, deletions, insertions) over normalized pairs, by jiwer."""
    import jiwer

    # jiwer refuses empty strings; an empty side is all deletions/insertions anyway.
    pairs = [(r, h) for r, h in zip(refs, hyps, strict=True) if r and h]
    errors = sum(len(r.split()) for r, h in zip(refs, hyps, strict=True) if not h)
    errors += sum(len(h.split()) for r, h in zip(refs, hyps, strict=True) if not r)
    if pairs:
        out = jiwer.process_words([r for r, _ in pairs], [h for _, h in pairs])
        errors += out.substitutions + out.deletions + out.insertions
    return errors
