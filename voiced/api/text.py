"""Sentence splitting for speech (voiced/sentences.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.sentences import (
    MIN_MAX_CHARS,
    iter_sentences,
    split_sentences,
)

__all__ = [
    "MIN_MAX_CHARS",
    "iter_sentences",
    "split_sentences",
]
