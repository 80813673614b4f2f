"""The recognizer's options, for every engine that runs the driver (``[stages.asr.<engine>]``)."""

from __future__ import annotations

from pydantic import Field

from ..constrained import BEAM
from ..fallback import FallbackOptions
from ..rescore import DROP


class RecognitionOptions(FallbackOptions):
    """The home-aware steps' switches (docs/asr.md, "The recognizer")."""

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
    home_rescore: bool = Field(
        True,
        description="when no hypothesis is a command: score this home's sentences a word or "
        "two from them against the audio; one that nearly says it, alone, wins (rescore.py)",
    )
    home_constrained: bool = Field(
        True,
        description="with home_rescore: also search Whisper's decoder within this home's "
        "sentences (its word graph) and hand the commands found to the rescoring (constrained.py)",
    )
    home_retry: bool = Field(
        True,
        description="when no hypothesis is a command: decode again with the full window and "
        "the home's names as a prompt; kept only if that is a command close to the first decode",
    )
    home_rescore_drop: float = Field(
        DROP,
        ge=0.0,
        description="most mean log-probability a token a rescored command may score below "
        "the free reading (first look; the full window's second look keeps 0.8)",
    )
    home_rescore_forms: bool = Field(
        True,
        description="score each rescored candidate as Whisper writes (cased as heard, the first "
        "word capitalized, ending in nothing, '.', '?' or the readings' own mark), the best form "
        "counting, as the free reading is scored in its own (rescore.py surface_forms)",
    )
    home_search_beam: int = Field(
        BEAM, ge=1, le=32, description="with home_constrained: readings the search keeps a step"
    )
    home_search_one_template: bool = Field(
        True,
        description="with home_constrained: the search keeps to sentences whose word pairs are "
        "all of one template (else any pair of the home's graph may follow any other)",
    )
    home_search_first_words: bool = Field(
        True,
        description="with home_constrained: offer the rescoring the likeliest other first "
        "words that make a command, of sentences found and of its best-scored candidates "
        "that are none (off: the likeliest four first words of found sentences only)",
    )
    home_rescore_names: bool = Field(
        True,
        description="with home_rescore: a rescored command keeps every word of the home's "
        "names the top reading has ('...the kitchen lights and the fan' is not 'turn off the "
        "kitchen light')",
    )
    home_rescore_full: bool = Field(
        False,
        description="with home_retry and home_rescore: when the retry is no command either, "
        "listen again in the full window (the retry's encoder output): rescoring and the "
        "constrained search there, against the free readings of both windows",
    )
    recognition_budget_s: float | None = Field(
        None,
        gt=0.0,
        description="anytime budget: once this many seconds are spent on an utterance, the "
        "recognizer runs no further step and keeps its best reading so far (None: no limit)",
    )
