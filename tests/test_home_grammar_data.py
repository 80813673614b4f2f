"""The home grammar as data (intent_hassil.portable): what a pool worker is sent. The stage
made back from it answers the recognizer's questions as the original does; data that is no
home grammar is refused with a message that says what is wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from home_stages import HOME, home_hassil
from voiced_plugins.intent_hassil import HassilIntent, HassilOptions
from voiced_plugins.intent_hassil.portable import (
    GrammarDataError,
    grammar_data,
    grammar_from_data,
)

SENTENCES = Path(__file__).parents[1] / "config" / "sentences"
SAID = [
    "turn on the kitchen lights",
    "torque on the kitchen lights",
    "set the brightness in the office to 40 percent",
    "what time is it",
    "the weather was lovely yesterday",
]


@pytest.fixture(scope="module")
def original():
    return home_hassil()


@pytest.fixture(scope="module")
def carried(original):
    return grammar_from_data(json.loads(json.dumps(grammar_data(original), default=str)))


def test_the_carried_grammar_answers_as_the_original(original, carried):
    for text in SAID:
        assert carried.is_command(text) == original.is_command(text), text
        assert carried.command_meaning(text) == original.command_meaning(text), text
        assert carried.command_candidates([text]) == original.command_candidates([text]), text
    assert carried.prompt_words() == original.prompt_words()
    assert carried.command_graph().following == original.command_graph().following


def test_the_data_has_the_homes_names_but_not_its_states(original):
    data = grammar_data(original)
    assert data["language"] == "en" and data["format"] == 1
    entity = data["home"]["entities"][0]
    assert "state" not in entity and entity["name"] == original.home.entities[0].name


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ([], "a home grammar is an object, not list"),
        ({"format": 2}, "format 2 is not 1"),
        ({"format": 1, "language": 5}, "'language' must be a language tag"),
        ({"format": 1, "language": "en", "sentences": []}, "'sentences' must be an object"),
        (
            {"format": 1, "language": "en", "sentences": {"intents": {}}, "home": {"areas": 3}},
            "'home.areas' must be a list",
        ),
        (
            {
                "format": 1,
                "language": "en",
                "sentences": {"intents": {}},
                "home": {"areas": [{"name": "Kitchen"}]},
                "fuzzy": True,
                "repair": True,
            },
            "the home is malformed",
        ),
    ],
)
def test_data_that_is_no_home_grammar_is_refused(data, reason):
    with pytest.raises(GrammarDataError, match=reason):
        grammar_from_data(data)


def test_custom_sentences_travel_marked_as_custom():
    original = HassilIntent(HassilOptions(home=str(HOME), sentences=[str(SENTENCES)]))
    original.load()
    carried = grammar_from_data(json.loads(json.dumps(grammar_data(original), default=str)))
    for text in ("good night in the kitchen", "lights out in the bedroom"):
        assert original.is_command(text) and carried.is_command(text), text
        assert carried.recognize(text).data["custom"] is True
