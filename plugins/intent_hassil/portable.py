"""The home grammar as data, and the intent stage made back from it.

What a recognizer on another machine (an ASR pool worker) needs to hear this home's commands:
the grammar's sentences of one language (home-assistant-intents', voiced's added ones and the
custom files, merged as the stage merged them), the home's floors, areas and entities (their
names, aliases and attributes; not their states) and the matching switches. ``grammar_data``
makes it JSON-ready; ``grammar_from_data`` builds an intent stage that answers the
recognizer's questions (``voiced.api.recognition.HomeGrammar``) as the original does.
"""

from __future__ import annotations

from typing import Any

from hassil import merge_dict

from . import HassilIntent, HassilOptions, _custom_sentences, languages
from .home import Home, home_from_dict

FORMAT = 1
"""The layout of the data; a reader refuses another."""

MAX_LANGUAGE_CHARS = 16


class GrammarDataError(ValueError):
    """Data that is no home grammar (wrong layout or types); the message says what is wrong."""


def grammar_data(stage: HassilIntent) -> dict[str, Any]:
    """``stage``'s home grammar (its one language) as JSON-ready data."""
    loader = HassilIntent(stage.options.model_copy(update={"language": stage.language}), stage.app)
    sentences = loader._language_data()
    first = next(iter(stage.grammars), None) == stage.language  # the config's own language
    for path in loader.sentence_files:
        if languages.file_is_for(path, stage.language, first):
            merge_dict(sentences, _custom_sentences(path))
    return {
        "format": FORMAT,
        "language": stage.language,
        "sentences": sentences,
        "home": home_data(stage.home),
        "fuzzy": stage.options.fuzzy,
        "repair": stage.options.repair,
    }


def home_data(home: Home) -> dict[str, Any]:
    """The home's floors, areas and entities as ``home_from_dict`` reads them (no states)."""
    return {
        "floors": [{"id": f.id, "name": f.name, "aliases": list(f.aliases)} for f in home.floors],
        "areas": [
            {"id": a.id, "name": a.name, "floor": a.floor_id, "aliases": list(a.aliases)}
            for a in home.areas
        ],
        "entities": [
            {
                "id": e.id,
                "name": e.name,
                "area": e.area_id,
                "aliases": list(e.aliases),
                "attributes": e.attributes,
            }
            for e in home.entities
        ],
    }


class _GivenGrammar(HassilIntent):
    """An intent stage whose sentences and home are given, not read from files."""

    def __init__(self, options: HassilOptions, sentences: dict[str, Any], home: Home) -> None:
        super().__init__(options)
        self._given_sentences = sentences
        self._given_home = home

    def _language_data(self) -> dict[str, Any]:
        self.sentence_files = []
        return self._given_sentences

    def _load_home(self) -> Home:
        return self._given_home


def grammar_from_data(data: Any) -> HassilIntent:
    """The intent stage of ``data`` (``grammar_data``'s), loaded; GrammarDataError if ``data``
    is no home grammar (the sentences' own faults raise what hassil raises)."""
    checked = _checked(data)
    options = HassilOptions(
        language=checked["language"],
        home="",
        sentences=[],
        builtin_sentences=False,
        fuzzy=checked["fuzzy"],
        repair=checked["repair"],
    )
    try:
        home = home_from_dict(checked["home"], source="(the front end's home)")
    except (TypeError, AttributeError, ValueError) as exc:
        raise GrammarDataError(f"the home is malformed: {exc}") from None
    stage = _GivenGrammar(options, checked["sentences"], home)
    stage.load()
    return stage


def _checked(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise GrammarDataError(f"a home grammar is an object, not {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise GrammarDataError(f"format {data.get('format')!r} is not {FORMAT}")
    language = data.get("language")
    if not isinstance(language, str) or not 0 < len(language) <= MAX_LANGUAGE_CHARS:
        raise GrammarDataError("'language' must be a language tag")
    sentences, home = data.get("sentences"), data.get("home")
    if not isinstance(sentences, dict) or not isinstance(sentences.get("intents"), dict):
        raise GrammarDataError("'sentences' must be an object with 'intents'")
    if not isinstance(home, dict):
        raise GrammarDataError("'home' must be an object (floors, areas, entities)")
    for key in ("floors", "areas", "entities"):
        if not isinstance(home.get(key, []), list):
            raise GrammarDataError(f"'home.{key}' must be a list")
    for key in ("fuzzy", "repair"):
        if not isinstance(data.get(key), bool):
            raise GrammarDataError(f"'{key}' must be true or false")
    return {**data, "sentences": {**sentences, "language": language}}
