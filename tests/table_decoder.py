"""A ``Decoder`` whose answers come from tables, and a home whose sentences are a table: the
recognizer's rules (plugins/asr_whisper/listen) run on them in milliseconds, no model.

The design allows it (voiced.api.recognition, DESIGN.md): the contract is the seam, the real
engines implement it and have real-speech tests of their own.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from voiced_plugins.asr_whisper.listen.driver import recognize
from voiced_plugins.asr_whisper.listen.homes import Homes
from voiced_plugins.asr_whisper.listen.options import RecognitionOptions

from voiced.api.intents import Transcript
from voiced.api.recognition import Decode, Hypothesis

Reading = tuple[str, float]
"""A reading and its mean log-probability a token."""


def plain(text: str) -> str:
    """A sentence without case and marks: how the tables are keyed."""
    return " ".join(re.sub(r"[^\w' %]", " ", text.casefold()).split())


@dataclass
class TableDecoder:
    """Decodes by table: ``readings["first"]`` for the first decode, ``["retry"]`` for the
    prompted one, ``["t0.2"]`` ... for the fallback's samples, ``["full"]`` (if given) for
    an unprompted decode of the full window; its no-speech probability ``no_speech_prob``,
    or ``no_speech_in[window]``; teacher-forced scores from
    ``scores`` (by ``plain`` text; ``unknown`` for any other). ``delays``: seconds a call
    (``generate``, ``forced_scores``) takes, to spend an anytime budget; ``loops``: the
    decodes (by key) that loop, and why."""

    readings: dict[str, list[Reading]]
    scores: dict[str, float] = field(default_factory=dict)
    unknown: float = -9.0
    no_speech_prob: float = 0.01
    no_speech_in: dict[int, float] = field(default_factory=dict)
    delays: dict[str, float] = field(default_factory=dict)
    loops: dict[str, str] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)
    name: str = "table"
    multilingual: bool = False
    scores_beside_steps: bool = True

    def tokenizer(self, language: str | None) -> Any:
        raise AssertionError("the table home has no word graph: no tokens are asked")

    def detect(self, samples: np.ndarray) -> tuple[str, float]:
        return "en", 1.0

    def encode(self, samples: np.ndarray, window: int) -> Any:
        self.calls.append(f"encode {window}")
        return ("encoded", window)

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
        key = "retry" if prompt_text else f"t{temperature}" if temperature else "first"
        if key == "first" and window == 30 and "full" in self.readings:
            key = "full"
        self.calls.append(f"generate {key} x{count}")
        self._take("generate")
        found = self.readings.get(key) or self.readings["first"]
        hypotheses = [Hypothesis(text, score) for text, score in found[:count]]
        loop = self.loops.get(key, "")
        no_speech = self.no_speech_in.get(window, self.no_speech_prob)
        return Decode(hypotheses, no_speech, temperature=temperature, loop=loop)

    def forced_scores(
        self, encoded: Any, language: str | None, texts: list[str], frames: int
    ) -> list[float]:
        self.calls.append(f"score {len(texts)}")
        self._take("forced_scores")
        return [self.scores.get(plain(text), self.unknown) for text in texts]

    def next_logprobs(self, encoded: Any) -> Any:
        raise AssertionError("the table home has no word graph: no search runs")

    def transcribe_long(self, samples: np.ndarray, language: str | None, data: dict) -> Any:
        raise AssertionError("table utterances are short")

    def asked(self, key: str) -> bool:
        """Whether a call starting with ``key`` (``generate retry``, ``score``) was made."""
        return any(call.startswith(key) for call in self.calls)

    def _take(self, call: str) -> None:
        if self.delays.get(call):
            time.sleep(self.delays[call])


@dataclass
class TableHome:
    """A home grammar (voiced.api.recognition.HomeGrammar) from tables: its commands and what
    each means, its names, and the sentences near a reading (default: every command)."""

    commands: dict[str, str]
    names: str = "Kitchen, Porch Light"
    near: dict[str, list[str]] | None = None
    asked: list[str] = field(default_factory=list)

    def is_command(self, text: str, exact: bool = False) -> bool:
        self.asked.append("is_command")
        return plain(text) in self.commands

    def prompt_words(self) -> str:
        return self.names

    def command_candidates(self, texts: list[str]) -> list[str]:
        self.asked.append("command_candidates")
        if self.near is None:
            return list(self.commands)
        return list(dict.fromkeys(c for t in texts for c in self.near.get(plain(t), [])))

    def command_meaning(self, text: str) -> str | None:
        return self.commands.get(plain(text))


class HomeApp:
    """The daemon's stage lookup with ``home`` as the intent stage."""

    def __init__(self, home: Any) -> None:
        self.home = home

    def stage(self, kind: str, name: str | None = None) -> Any:
        return self.home if kind == "intent" else None


SPEECH = (np.random.default_rng(0).standard_normal(16000 * 2) * 0.1).astype(np.float32)
"""Two seconds loud enough to pass the quiet check (the table decides what they say)."""


def listen(
    decoder: TableDecoder, home: Any, language: str = "en", **switches: Any
) -> tuple[Transcript, dict[str, Any]]:
    """The recognizer's transcript of ``SPEECH`` in ``language`` with ``switches`` under
    ``recognition``, and its decision record."""
    options = RecognitionOptions(recognition=switches)
    transcript = recognize(decoder, Homes(HomeApp(home), decoder), SPEECH, language, options)
    return transcript, transcript.data["decision"]


def steps(decision: dict[str, Any]) -> list[str]:
    """The steps a decision record says ran, in order."""
    return [step["step"] for step in decision["steps"]]


def bundled_tokenizer(model: str, language: str) -> Any:
    """The real tokenizer of a bundled Whisper model (``tiny.en``, ``base``) in ``language``."""
    import tokenizers
    from faster_whisper.tokenizer import Tokenizer
    from voiced_plugins.asr_whisper.models import bundled_ct2_dir

    path = bundled_ct2_dir(model) / "tokenizer.json"
    multilingual = not model.endswith(".en")
    return Tokenizer(
        tokenizers.Tokenizer.from_file(str(path)), multilingual, "transcribe", language
    )


def saying(tokens: list[int], vocabulary: int) -> Any:
    """Next-token log-probabilities (``Decoder.next_logprobs``' steps) that say ``tokens``
    and give every other token -8."""

    def steps(prompt: list[int], prefixes: list[tuple[int, ...]]) -> list[np.ndarray]:
        rows = []
        for prefix in prefixes:
            row = np.full(vocabulary + 2000, -8.0, dtype=np.float32)
            if len(prefix) < len(tokens) and list(prefix) == tokens[: len(prefix)]:
                row[tokens[len(prefix)]] = -0.1
            rows.append(row)
        return rows

    return steps


def saying_text(tokenizer: Any, said: str) -> Any:
    """``saying`` the tokens of ``said`` (with its leading space), then the end of text."""
    wanted = [*tokenizer.encode(" " + said), tokenizer.eot]
    return saying(wanted, tokenizer.tokenizer.get_vocab_size())
