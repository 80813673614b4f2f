"""Language tags and each stage's spelling of them (voiced/languages.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.languages import (
    LanguageError,
    canonical,
    counts_characters,
    espeak_voice,
    intents_language,
    primary,
    same_language,
    whisper_language,
)
from voiced.numerals import CHINESE_NUMERALS, chinese_number, chinese_numerals

__all__ = [
    "CHINESE_NUMERALS",
    "LanguageError",
    "canonical",
    "chinese_number",
    "chinese_numerals",
    "counts_characters",
    "espeak_voice",
    "intents_language",
    "primary",
    "same_language",
    "whisper_language",
]
