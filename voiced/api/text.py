"""Sentence splitting for speech (voiced/sentences.py); credentials out of shown URLs
(voiced/redact.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.limits import CommandRefused, TextTooLong, check_say_text, clip
from voiced.redact import redact_urls, split_credentials
from voiced.sentences import (
    MIN_MAX_CHARS,
    iter_sentences,
    split_sentences,
)

__all__ = [
    "MIN_MAX_CHARS",
    "CommandRefused",
    "TextTooLong",
    "check_say_text",
    "clip",
    "iter_sentences",
    "redact_urls",
    "split_credentials",
    "split_sentences",
]
