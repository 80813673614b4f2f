"""What the recognizer knows of one utterance while its steps run."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from voiced.api.languages import counts_characters, primary
from voiced.api.recognition import Decision, Decode, Decoder, HomeGrammar, Hypothesis, NextLogprobs

from ..common import SAMPLE_RATE
from ..constrained import Found
from .options import RecognitionOptions

LEAN_LANGUAGES = frozenset({"en", "zh"})
"""Where the home steps read an improbable decode without the fallback's samples, and a
sure one nothing is near without the retry, losing nothing: English (the tuning set) and
Mandarin (the languages benchmark's tuning half; its report half agreed). Not German: its
report half lost 4 of 68 commands without them (docs/asr.md)."""


@dataclass(frozen=True)
class Plan:
    """Which steps may run: the endpoint's pass runs all, the early-commit draft the first."""

    fallback: bool = True
    home_steps: bool = True
    """Rescoring, the constrained search, the prompted retry, the second look."""
    quiet_check: bool = True
    home: bool = True
    """Whether the home is asked at all (not at warm-up)."""


FULL = Plan()
DRAFT = Plan(fallback=False, home_steps=False)
WARMUP = Plan(fallback=False, home_steps=False, quiet_check=False, home=False)


@dataclass
class Window:
    """One encoder window of the utterance and what was computed in it (scores, finds)."""

    encoded: Any
    width: int
    frames: int
    scores: dict[str, float] = field(default_factory=dict)
    found: Found | None = None
    searched: bool = False
    tails: Found | None = None
    """The commands the tail search made here (../tails.py), once it ran."""
    tails_searched: bool = False
    steps: NextLogprobs | None = None
    """The search's next-token steps here, kept for a second search (the samples')."""

    def score(self, decoder: Decoder, language: str | None, texts: list[str]) -> list[float]:
        """Teacher-forced scores of ``texts`` in this window (each scored once)."""
        new = [t for t in dict.fromkeys(texts) if t not in self.scores]
        if new:
            values = decoder.forced_scores(self.encoded, language, new, self.frames)
            self.scores.update(zip(new, values, strict=True))
        return [self.scores[t] for t in texts]


class Remembered:
    """The home as the steps ask it about one utterance, each answer kept: the search and
    each of the rescoring's picks ask the meaning of the same sentences (a strict match
    costs ≈ 4 ms); every other question goes to the home as it is."""

    def __init__(self, home: Any) -> None:
        self.home = home
        self._candidates: dict[tuple[str, ...], list[str]] = {}
        self._meanings: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name == "home":  # not set yet: no question to pass on
            raise AttributeError(name)
        return getattr(self.home, name)

    def command_candidates(self, texts: list[str]) -> list[str]:
        key = tuple(texts)
        if key not in self._candidates:
            self._candidates[key] = self.home.command_candidates(texts)
        return list(self._candidates[key])

    def command_meaning(self, text: str) -> Any:
        if text not in self._meanings:
            self._meanings[text] = self.home.command_meaning(text)
        return self._meanings[text]


@dataclass
class Utterance:
    """The audio, who is asked about it, and the rules the steps follow."""

    decoder: Decoder
    home: HomeGrammar | None
    samples: np.ndarray
    language: str | None
    options: RecognitionOptions
    plan: Plan
    grammar: Any = None
    """The home's token grammar for the constrained search (None: no search)."""
    started: float = field(default_factory=time.perf_counter)

    @functools.cached_property
    def asked(self) -> Remembered:
        """The home as this utterance's steps ask it (answers kept)."""
        return Remembered(self.home)

    @property
    def seconds(self) -> float:
        return len(self.samples) / SAMPLE_RATE

    @property
    def lean(self) -> bool:
        """Whether the home steps may go without the fallback's samples of an improbable
        decode and the retry of a sure one in this language (``LEAN_LANGUAGES``)."""
        return primary(self.language or "en") in LEAN_LANGUAGES

    @property
    def in_characters(self) -> bool:
        """Whether the language is written in characters, without spaces (Mandarin)."""
        return counts_characters(self.language or "en")

    @property
    def count(self) -> int:
        """Hypotheses to decode: N-best needs a home to judge them."""
        return self.options.recognition.hypotheses if self.home is not None else 1

    def spent(self) -> bool:
        """Whether the anytime budget is spent."""
        budget = self.options.recognition.budget_s
        return budget is not None and time.perf_counter() - self.started >= budget


def encode_window(u: Utterance, width: int) -> Window:
    """The utterance encoded in a window of ``width`` seconds (its frames: the audio's)."""
    frames = min(width * 100, int(u.seconds * 100) + 1)
    return Window(u.decoder.encode(u.samples, width), width, frames)


@dataclass
class Listening:
    """The readings so far and the one kept: the steps' shared record."""

    window: Window
    decode: Decode
    chosen: Hypothesis
    command: bool
    decision: Decision
    fallback: list[dict[str, Any]] = field(default_factory=list)
    retried: list[Hypothesis] = field(default_factory=list)
    rescored: dict[str, Any] | None = None
    windows: dict[int, Window] = field(default_factory=dict)
    heard_names: frozenset[str] = frozenset()
    unmatched: bool = False
    """Speech that is no command on this home yet (the home steps' cue)."""
    sample_later: bool = False
    """The fallback waits for the rescoring's first look (``fallback.looks_first``)."""

    @property
    def hypotheses(self) -> list[Hypothesis]:
        return self.decode.hypotheses

    def keep(self, reading: Hypothesis, step: str, why: str | None = None) -> None:
        """Keep ``reading``, found by ``step`` (not the first decode's choice)."""
        self.chosen, self.unmatched = reading, False
        self.decision.step, self.decision.index = step, -1
        if why is not None:
            self.decision.why = why
