"""The contract between an acoustic model and the home's language (docs/asr.md).

A recognizer (the Whisper plugin's ``listen`` driver) asks two parties questions:

* a ``Decoder``, the engine side: Whisper on CTranslate2 or on torch, whatever runs it;
* a ``HomeGrammar``, the intent side: which sentences are commands on this home.

It answers with a ``Decision``: which step decided, why, the scores, and each step's time;
the transcript event's ``hypothesis`` data is made from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class Hypothesis:
    """One reading of the audio and its mean log-probability a token."""

    text: str
    avg_logprob: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "avg_logprob": round(self.avg_logprob, 3)}


@dataclass(frozen=True)
class Decode:
    """One decode of an utterance: its hypotheses (best first) and what judges it."""

    hypotheses: list[Hypothesis]
    no_speech_prob: float
    dropped: int = 0
    temperature: float = 0.0
    compression_ratio: float = 0.0
    """Of the top hypothesis's text as decoded (before loops were cut)."""
    loop: str = ""
    """Why the top hypothesis is a loop the compression ratio misses ("": it isn't)."""

    @property
    def avg_logprob(self) -> float:
        return self.hypotheses[0].avg_logprob if self.hypotheses else -float("inf")

    def summary(self, failure: str | None) -> dict[str, Any]:
        top = self.hypotheses[0].text if self.hypotheses else ""
        return {
            "temperature": self.temperature,
            "text": top,
            "avg_logprob": round(self.avg_logprob, 3),
            "compression_ratio": round(self.compression_ratio, 2),
            **({"failed": failure} if failure else {}),
        }


NextLogprobs = Callable[[list[int], list[tuple[int, ...]]], list[np.ndarray]]
"""The log-probabilities of the token after each prefix (after a prompt), in one window."""


@runtime_checkable
class Decoder(Protocol):
    """What an engine offers the recognizer: decoding primitives over one encoded window."""

    name: str
    """The engine's name (``whisper-ctranslate2``), as in the transcript."""

    @property
    def multilingual(self) -> bool:
        """Whether the model detects and speaks languages other than English."""
        ...

    def tokenizer(self, language: str | None) -> Any:
        """Whisper's tokenizer of ``language`` (``encode``, ``decode``, ``sot_sequence``, ...)."""
        ...

    def detect(self, samples: np.ndarray) -> tuple[str, float]:
        """The language spoken and its probability (multilingual models only)."""
        ...

    def encode(self, samples: np.ndarray, window: int) -> Any:
        """The encoder output of ``samples`` in a ``window`` s window (once per window)."""
        ...

    def generate(
        self,
        encoded: Any,
        seconds: float,
        window: int,
        language: str | None,
        prompt_text: str = "",
        count: int = 1,
        temperature: float = 0.0,
    ) -> Decode:
        """N-best with scores: greedy/beam (``temperature`` 0) or samples; ``prompt_text``
        as the previous text."""
        ...

    def forced_scores(
        self, encoded: Any, language: str | None, texts: list[str], frames: int
    ) -> list[float]:
        """Teacher-forced mean log-probability a token of each of ``texts`` given the audio."""
        ...

    def next_logprobs(self, encoded: Any) -> NextLogprobs:
        """Constrained next-token steps in ``encoded`` (the grammar search's one question)."""
        ...

    @property
    def scores_beside_steps(self) -> bool:
        """Whether ``forced_scores`` may run on another thread while ``next_logprobs``' steps
        run and gain by it (they use other resources: CTranslate2's ``align`` beside the
        numpy steps); not where they share one model's threads (torch, a GPU)."""
        ...

    def transcribe_long(self, samples: np.ndarray, language: str | None, data: dict) -> Any:
        """A ``Transcript`` of audio longer than one window (the engine's long-form loop)."""
        ...


@runtime_checkable
class HomeGrammar(Protocol):
    """What the intent side offers the recognizer: this home's language."""

    def is_command(self, text: str, exact: bool = False) -> bool:
        """Whether ``text`` is a command here (``exact``: without snapping names)."""
        ...

    def prompt_words(self) -> str:
        """The home's names, as a decoder prompt."""
        ...

    def command_candidates(self, texts: list[str]) -> list[str]:
        """The home's sentences a word or two from ``texts``."""
        ...

    def command_meaning(self, text: str) -> Any:
        """What ``text`` means as a strict command (None: it is none)."""
        ...

    def command_graph(self) -> Any:
        """The home's word graph (``following``, ``numbers``, ``templates``); None: none."""
        ...

    def skip_words(self) -> tuple[str, ...]:
        """Words and phrases said around a command that mean nothing (fillers, politeness);
        a grammar without this question has none."""
        ...

    def written_forms(self, word: str) -> tuple[str, ...]:
        """Other ways a decoder may write ``word`` of the graph ("廚房" for "厨房": Chinese in
        the other script); a grammar without this question has none."""
        ...

    def sounds_of(self, text: str) -> list[str]:
        """The syllables of ``text`` by their sound (Mandarin: folded toneless pinyin), by
        which a recognizer grounds what it found in what it heard and settles commands that
        score alike; [] (or a grammar without this question) in a language written in words,
        where the recognizer settles them by the readings' letters."""
        ...


@dataclass(frozen=True)
class Step:
    """One step the recognizer ran on an utterance: what it found, in how long."""

    name: str
    """``quiet``, ``first``, ``fallback``, ``rescore``, ``retry``, ``second_look``."""
    outcome: str
    ms: float

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.name, "outcome": self.outcome, "ms": round(self.ms, 1)}


@dataclass
class Decision:
    """Which step decided an utterance's text, why, with what scores, each step's time."""

    step: str = "first"
    """The step whose reading was kept."""
    why: str = ""
    index: int = 0
    """The kept hypothesis of the first decode (-1: none of them, a later step's)."""
    retried: bool = False
    """Whether the prompted retry ran."""
    steps: list[Step] = field(default_factory=list)
    budget_s: float | None = None
    """The time budget (None: none)."""
    skipped: list[str] = field(default_factory=list)
    """Steps left out because the budget was spent."""
    home: bool | None = None
    """Whether a home grammar was there to ask (None: not recorded)."""
    profile: str = "home"
    """The recognition profile: ``home`` (the home's steps) or ``free`` (none of them)."""

    def ran(self, name: str, outcome: str, ms: float) -> None:
        """Record a step."""
        self.steps.append(Step(name, outcome, ms))

    def hypothesis(self) -> dict[str, Any]:
        """The transcript event's ``hypothesis`` data (its keys as before the record)."""
        return {"index": self.index, "retried": self.retried, "why": self.why}

    def to_dict(self) -> dict[str, Any]:
        """The transcript event's ``decision`` data: the step that decided, each step run."""
        return {
            "step": self.step,
            "profile": self.profile,
            "steps": [s.to_dict() for s in self.steps],
            **({"budget_s": self.budget_s} if self.budget_s is not None else {}),
            **({"skipped": self.skipped} if self.skipped else {}),
            **({"home": self.home} if self.home is not None else {}),
        }


def home_grammar(intent: Any, language: str | None = None) -> HomeGrammar | None:
    """``intent`` (an intent stage; its grammar of ``language`` where it has several) as a
    home grammar, when it can tell a command from other speech."""
    for_language = getattr(intent, "for_language", None)
    if language and callable(for_language):
        intent = for_language(language)
    if intent is not None and callable(getattr(intent, "is_command", None)):
        return intent
    return None


HOME_STEPS = ("choice", "rescore", "retry", "second_look")
"""The steps that ask the home: the N-best's choice of a command, rescoring with the
constrained search, the prompted retry, the second look."""


def without_home(why: str) -> dict[str, Any]:
    """A transcript's ``without_home`` data: the home's steps skipped, and why (an engine
    elsewhere that lacked the home, or a service that cannot score sentences)."""
    return {"skipped": list(HOME_STEPS), "why": why}


def has(grammar: Any, *questions: str) -> bool:
    """Whether ``grammar`` answers each of ``questions`` (a partial home grammar may not)."""
    return grammar is not None and all(callable(getattr(grammar, q, None)) for q in questions)


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
