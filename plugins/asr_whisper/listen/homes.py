"""The homes a recognizer asks: the intent stage's grammar per language, and its token
grammar for the constrained search (built once per home and tokenizer)."""

from __future__ import annotations

from typing import Any

from voiced.api.recognition import Decoder, HomeGrammar, has

from ..choose import checker_of
from ..constrained import GrammarCache, TokenGrammar
from ..language import pinned
from .options import RecognitionOptions


class Homes:
    """The app's home grammars as a recognizer over ``decoder`` asks them."""

    def __init__(self, app: Any, decoder: Decoder) -> None:
        self.app = app
        self.decoder = decoder
        self._grammars: dict[str | None, GrammarCache] = {}

    def home(self, language: str | None) -> HomeGrammar | None:
        """The intent stage's grammar of ``language``, when it can tell a command."""
        return checker_of(self.app, language)

    def grammar(self, language: str | None, home: HomeGrammar | None) -> TokenGrammar | None:
        """The constrained search's token grammar of ``home`` in ``language`` (None: the home
        has no sentence graph)."""
        if not has(home, "command_graph", "command_candidates", "command_meaning"):
            return None
        return self._grammars.setdefault(language, GrammarCache()).get(
            home, self.decoder.tokenizer(language)
        )


def build_grammars(
    homes: Homes, engine: str, options: RecognitionOptions, app: Any, multilingual: bool
) -> None:
    """The constrained search's token grammar of each language the config speaks, built as
    the model loads, not on the first utterance nothing matches (maybe hours later)."""
    if not (options.home_rescore and options.home_constrained):
        return
    languages = getattr(getattr(app, "settings", None), "languages", None)
    spoken = list(languages()) if callable(languages) else []
    for requested in dict.fromkeys([*spoken, options.language]):
        if requested is None and multilingual:
            continue  # detected per utterance: no grammar to guess
        language = pinned(engine, requested, options.language, multilingual)
        homes.grammar(language, homes.home(language))
