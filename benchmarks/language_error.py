"""Error rates per language: WER on words, CER on characters for languages written without
spaces (Chinese, Japanese, Thai).

English goes through ``benchmarks.wer`` (its number words and contractions). Any other
language: case folded, NFKC, punctuation (full-width too) dropped; Chinese converted to the
reference's script first (Whisper writes traditional as often as simplified, and "燈" for
"灯" is the same word) and counted in characters.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.wer import edit_distance, normalize
from voiced.languages import counts_characters, primary

_PUNCTUATION = re.compile(r"[^\w\s]", re.UNICODE)


@dataclass(frozen=True)
class ErrorRate:
    rate: float  # (substitutions + deletions + insertions) / reference units
    errors: int
    units: int  # reference words or characters
    unit: str  # "word" or "character"
    sentences: int

    @property
    def name(self) -> str:
        return "CER" if self.unit == "character" else "WER"


def _simplified(text: str) -> str:
    try:
        from opencc_purepy import OpenCC
    except ImportError:
        return text
    return OpenCC("t2s").convert(text)


def units(text: str, language: str) -> list[str]:
    """The words (or characters) of ``text`` that an error rate in ``language`` counts."""
    if primary(language) == "en":
        return normalize(text).split()
    text = unicodedata.normalize("NFKC", text).casefold()
    if primary(language) == "zh":
        text = _simplified(text)
    text = _PUNCTUATION.sub(" ", text)
    if counts_characters(language):
        return [ch for ch in text if not ch.isspace()]
    return text.split()


def error_rate(references: Sequence[str], hypotheses: Sequence[str], language: str) -> ErrorRate:
    """Corpus WER (or CER) of ``hypotheses`` against ``references`` in ``language``."""
    if len(references) != len(hypotheses):
        raise ValueError(f"{len(references)} references but {len(hypotheses)} hypotheses")
    refs = [units(r, language) for r in references]
    hyps = [units(h, language) for h in hypotheses]
    total = sum(len(r) for r in refs)
    if total == 0:
        raise ValueError("the references are empty: the error rate is undefined")
    errors = sum(edit_distance(r, h) for r, h in zip(refs, hyps, strict=True))
    unit = "character" if counts_characters(language) else "word"
    return ErrorRate(errors / total, errors, total, unit, len(refs))
