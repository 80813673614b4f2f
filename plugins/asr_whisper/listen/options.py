"""The recognizer's options, for every engine that runs the driver: one ``recognition``
profile per ASR stage, the expert switches nested under it (docs/asr.md, "The recognition
profile").

    [stages.asr.whisper-ctranslate2]
    recognition = "free"                 # the profile alone

    [stages.asr.whisper-ctranslate2.recognition]
    profile = "home"                     # or a table: the profile and the switches it keeps
    budget_s = 1.0
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..constrained import BEAM, BEAM_CHARACTERS
from ..fallback import FallbackOptions
from ..rescore import DROP

log = logging.getLogger(__name__)
_warned: set[tuple[str, str]] = set()

Profile = Literal["home", "free"]

BUDGET_S: float | None = None
"""The default anytime budget a command may take (docs/asr.md, "The latency budget")."""


class Recognition(BaseModel):
    """``[stages.asr.<engine>.recognition]``: how much of the home the recognizer uses.

    ``home`` (the default): every step below that is on; ``free`` (dictation, chatter-heavy
    uses): Whisper's reading as it is, no step asks the home (no N-best choice, rescoring,
    search nor retry), so nothing is ever steered toward a command.
    """

    model_config = ConfigDict(extra="forbid")

    profile: Profile = Field(
        "home",
        description="home: the home-aware steps (N-best choice, rescoring with the constrained "
        "search, prompted retry); free: Whisper's reading alone, for dictation and chatter",
    )
    hypotheses: int = Field(
        3,
        ge=1,
        le=8,
        description="N-best: hypotheses to decode (beam search, beam >= N) when an intent stage "
        "can tell commands: it picks one within hypothesis_margin of the top one",
    )
    hypothesis_margin: float = Field(
        0.3, ge=0.0, description="most average log-probability below the top hypothesis"
    )
    rescore: bool = Field(
        True,
        description="when no hypothesis is a command: score this home's sentences a word or "
        "two from them against the audio; one that nearly says it, alone, wins (rescore.py)",
    )
    constrained: bool = Field(
        True,
        description="with rescore: also search Whisper's decoder within this home's "
        "sentences (its word graph) and hand the commands found to the rescoring (constrained.py)",
    )
    retry: bool = Field(
        True,
        description="when no hypothesis is a command: decode again with the full window and "
        "the home's names as a prompt; kept only if that is a command close to the first decode",
    )
    fallback: bool = Field(
        False,
        description="sample again every decode that fails Whisper's thresholds before the "
        "home steps (off: in English and Mandarin, a decode that is merely improbable is left "
        "to rescoring and the retry, a loop is still sampled again; other languages sample "
        "it after the rescoring's first look found no command; the free profile always samples)",
    )
    rescore_drop: float = Field(
        DROP,
        ge=0.0,
        description="most mean log-probability a token a rescored command may score below "
        "the free reading (first look; the full window's second look keeps 0.8)",
    )
    rescore_forms: bool = Field(
        True,
        description="score each rescored candidate as Whisper writes (cased as heard, the first "
        "word capitalized, ending in nothing, '.', '?' or the readings' own mark), the best form "
        "counting, as the free reading is scored in its own (rescore.py surface_forms)",
    )
    rescore_names: bool = Field(
        True,
        description="with rescore: a rescored command keeps every word of the home's "
        "names the top reading has ('...the kitchen lights and the fan' is not 'turn off the "
        "kitchen light')",
    )
    rescore_full: bool = Field(
        False,
        description="with retry and rescore: when the retry is no command either, "
        "listen again in the full window (the retry's encoder output): rescoring and the "
        "constrained search there, against the free readings of both windows",
    )
    search_beam: int | None = Field(
        None,
        ge=1,
        le=32,
        description="with constrained: readings the search keeps a step (None: the "
        f"language's, {BEAM}; {BEAM_CHARACTERS} for one written in characters)",
    )
    search_one_template: bool = Field(
        True,
        description="with constrained: the search keeps to sentences whose word pairs are "
        "all of one template (else any pair of the home's graph may follow any other)",
    )
    search_first_words: bool = Field(
        True,
        description="with constrained: offer the rescoring the likeliest other first "
        "words that make a command, of sentences found and of its best-scored candidates "
        "that are none (off: the likeliest four first words of found sentences only)",
    )
    search_openings: bool = Field(
        True,
        description="with constrained: a sentence the search finds may open with the "
        "home's skip words ('could you', 'um', 'please'), as said before a command",
    )
    search_tails: bool = Field(
        True,
        description="with constrained: where no command is near what was heard, search what "
        "follows the reading's first word among the home's words, and offer the rescoring "
        "the commands that put the home's first words before what was found (a misheard "
        "first word: 'Liechne ist es.' for 'Wie spät ist es?')",
    )
    budget_s: float | None = Field(
        BUDGET_S,
        gt=0.0,
        description="anytime budget: once this many seconds are spent on an utterance, the "
        "recognizer runs no further step and keeps its best reading so far (None: no limit)",
    )

    @property
    def home(self) -> bool:
        """Whether the recognizer asks the home at all (the ``home`` profile)."""
        return self.profile == "home"

    @property
    def searches(self) -> bool:
        """Whether the constrained search runs (with the rescoring)."""
        return self.home and self.rescore and self.constrained


FLAT_KEYS: dict[str, str] = {
    "hypotheses": "hypotheses",
    "hypothesis_margin": "hypothesis_margin",
    "home_rescore": "rescore",
    "home_constrained": "constrained",
    "home_retry": "retry",
    "home_rescore_drop": "rescore_drop",
    "home_rescore_forms": "rescore_forms",
    "home_rescore_names": "rescore_names",
    "home_rescore_full": "rescore_full",
    "home_search_beam": "search_beam",
    "home_search_one_template": "search_one_template",
    "home_search_first_words": "search_first_words",
    "recognition_budget_s": "budget_s",
}
"""The switches that were flat keys of the engine's table, and their key under
``recognition`` now (an old config still starts, with a warning naming the new key)."""


class RecognitionOptions(FallbackOptions):
    """The options of an engine that runs the recognizer: its ``recognition`` profile."""

    section: ClassVar[str] = "stages.asr.<engine>"
    """The engine's config table, as warnings name it."""

    recognition: Recognition = Field(
        default_factory=Recognition,
        description='"home" (default) or "free", or a table: profile = ... and the expert '
        "switches (docs/asr.md, 'The recognition profile')",
    )

    @field_validator("recognition", mode="before")
    @classmethod
    def _profile_alone(cls, value: Any) -> Any:
        """``recognition = "free"``: the profile alone."""
        return {"profile": value} if isinstance(value, str) else value

    @model_validator(mode="before")
    @classmethod
    def _flat_keys(cls, data: Any) -> Any:
        """Old flat keys (``home_retry = false``) moved under ``recognition``, with a warning."""
        if not isinstance(data, dict) or not FLAT_KEYS.keys() & data.keys():
            return data
        data = dict(data)
        nested = data.get("recognition", {})
        if isinstance(nested, Recognition):
            nested = nested.model_dump(exclude_unset=True)
        nested = {"profile": nested} if isinstance(nested, str) else nested
        if not isinstance(nested, dict):
            return data  # the model says what is wrong with it
        nested = dict(nested)
        for old in [key for key in FLAT_KEYS if key in data]:
            new, value = FLAT_KEYS[old], data.pop(old)
            if new in nested and nested[new] != value:
                raise ValueError(f"{old} = {value!r} and recognition.{new} disagree: drop {old}")
            nested[new] = value
            deprecated(cls.section, old, new)
        data["recognition"] = nested
        return data


def deprecated(section: str, old: str, new: str) -> None:
    """Warn, once a process, that ``old`` in ``[section]`` is now ``recognition.new``."""
    if (section, old) not in _warned:
        _warned.add((section, old))
        log.warning(
            "[%s] %s is deprecated: set %s under [%s.recognition]", section, old, new, section
        )
