"""The homes a recognizer asks: the intent stage's grammar per language, and its token
grammar for the constrained search (built once per home and tokenizer)."""

from __future__ import annotations

from typing import Any

from voiced.api.recognition import Decoder, HomeGrammar, has

from ..choose import checker_of
from ..constrained import GrammarCache, TokenGrammar


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
