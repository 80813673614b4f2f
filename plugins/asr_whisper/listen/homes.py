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
    """The app's home grammars as a recognizer over ``decoder`` asks them. An app that serves
    several homes (a pool worker) says how many with ``homes_kept``; their token grammars are
    kept built."""

    def __init__(self, app: Any, decoder: Decoder) -> None:
        self.app = app
        self.decoder = decoder
        self.kept = int(getattr(app, "homes_kept", 1))
        self._grammars: dict[str | None, GrammarCache] = {}

    def home(self, language: str | None) -> HomeGrammar | None:
        """The intent stage's grammar of ``language``, when it can tell a command."""
        return checker_of(self.app, language)

    def grammar(self, language: str | None, home: HomeGrammar | None) -> TokenGrammar | None:
        """The constrained search's token grammar of ``home`` in ``language`` (None: the home
        has no sentence graph)."""
        if not has(home, "command_graph", "command_candidates", "command_meaning"):
            return None
        return self._grammars.setdefault(language, GrammarCache(self.kept)).get(
            home, self.decoder.tokenizer(language)
        )

    def build(self, options: RecognitionOptions) -> None:
        """The constrained search's token grammar of each language the config speaks, built
        now as the model is, not on the first utterance nothing matches (maybe hours later)."""
        if not options.recognition.searches:
            return
        settings = getattr(self.app, "settings", None)
        languages = getattr(settings, "languages", None)
        spoken = list(languages()) if callable(languages) else []
        multilingual = self.decoder.multilingual
        for requested in dict.fromkeys([*spoken, options.language]):
            if requested is None and multilingual:
                continue  # detected per utterance: no grammar to guess
            language = pinned(self.decoder.name, requested, options.language, multilingual)
            self.grammar(language, self.home(language))

    def warm(self, options: RecognitionOptions, home: Any, language: str | None) -> None:
        """``home``'s token grammar for the constrained search, built now (a pool worker given
        a front end's home), when the options search."""
        if options.recognition.searches:
            decoder = self.decoder
            language = pinned(decoder.name, language, options.language, decoder.multilingual)
            self.grammar(language, home)
