"""Make ASR text easier to match: unicode forms, odd apostrophes, filler words.

Case, punctuation and numbers spoken as words ("fifty percent", "five minutes") are handled
by hassil itself (range lists accept words for the intents' language), so this stays small.
"""

from __future__ import annotations

import re
import unicodedata

FILLER_WORDS = (
    "um", "umm", "uh", "uhh", "uhm", "er", "erm", "ah", "hmm", "mm",
    "hey", "hi", "okay", "ok", "so", "well", "like", "just", "kindly", "please",
    "can you", "could you", "would you", "will you", "would you mind",
    "i want you to", "i'd like you to", "go ahead and",
)  # fmt: skip
"""Words dropped before matching; hassil retries with them kept when a template needs one."""

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_SPACES = re.compile(r"\s+")
_EDGE_PUNCTUATION = re.compile(r"^[\s\"'.,!?;:…-]+|[\s\"'.,!?;:…-]+$")


def normalize(text: str) -> str:
    """NFKC, straight apostrophes, no edge punctuation, single spaces."""
    text = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)
    text = _EDGE_PUNCTUATION.sub("", text)
    return _SPACES.sub(" ", text).strip()
