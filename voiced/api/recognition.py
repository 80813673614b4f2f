"""The recognizer's contract: ``Decoder`` (the engine side), ``HomeGrammar`` (the intent side),
``Decision`` (which step decided and why) (voiced/recognition.py).

Public API for plugins: names here stay stable; the module behind them may move."""

from __future__ import annotations

from voiced.recognition import (
    HOME_STEPS,
    Decision,
    Decode,
    Decoder,
    HomeGrammar,
    Hypothesis,
    NextLogprobs,
    Step,
    has,
    home_grammar,
    without_home,
)

__all__ = [
    "HOME_STEPS",
    "Decision",
    "Decode",
    "Decoder",
    "HomeGrammar",
    "Hypothesis",
    "NextLogprobs",
    "Step",
    "has",
    "home_grammar",
    "without_home",
]
