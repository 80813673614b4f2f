"""The strict matcher asks only the templates a sentence's word pairs allow (narrowed.py), and
answers as it does asking every template. The home is config/home.yaml."""

from __future__ import annotations

import dataclasses

import pytest
from home_stages import HOME
from voiced_plugins.intent_hassil import HassilIntent, HassilOptions
from voiced_plugins.intent_hassil.home import Entity


@pytest.fixture(scope="module")
def hassil() -> HassilIntent:
    stage = HassilIntent(HassilOptions(home=str(HOME)))
    stage.load()
    return stage


def every_template(stage: HassilIntent, text: str) -> object:
    """The stage's match of ``text`` over every loaded template: what narrowing must keep."""
    kept, stage.narrowed = stage.narrowed, None
    try:
        return narrowed(stage, text)
    finally:
        stage.narrowed = kept


def narrowed(stage: HassilIntent, text: str) -> object:
    result = stage._recognize(text, {})
    if result is None:
        return None
    return result.intent.name, sorted((e.name, str(e.value)) for e in result.entities_list)


def templates(intents: object) -> int:
    return sum(len(d.sentences) for i in intents.intents.values() for d in i.data)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "text",
    [
        "turn on the desk lamp",
        "turn off the lights in the kitchen",
        "is the front door locked",
        "what is the temperature in the living room",
        "set the desk lamp brightness to 50%",
        "add lamp to my shopping list",  # a wildcard's words the graph knows as others
        "add milk to my shopping list",
        "please turn on the desk lamp",  # a skip phrase
        "what is the weather like",
        "whats the front door like",  # "like" is a graph word; hassil drops it as a filler
        "turn on the radio",  # no radio: no command
        "in the back door locked",
        "is on the desk lamp",
        "lock the car",
        "set a timer for 5 minutes",
    ],
)
def test_a_narrowed_match_is_the_match_over_every_template(hassil, text):
    assert narrowed(hassil, text) == every_template(hassil, text)


def test_a_sentence_is_asked_of_its_own_templates_and_the_wildcard_ones(hassil):
    asked = hassil.narrowed.intents_for("turn on the desk lamp")
    assert templates(asked) < templates(hassil.intents) / 5
    assert "HassTurnOn" in asked.intents
    assert "HassShoppingListAddItem" in asked.intents  # a wildcard slot rules nothing out


def test_a_number_in_digits_is_read_as_the_graphs_number_word(hassil):
    assert hassil.narrowed.templates_of("set the desk lamp brightness to 50") is not None


@pytest.mark.parametrize(
    "text",
    [
        "please turn on the desk lamp",  # hassil drops "please"; its pairs are no template's
        "whats the front door like",
        "turn on the yurt lights",  # a word the graph does not know
        "",
    ],
)
def test_the_graph_tells_nothing_of_a_sentence_with_a_skip_phrase_or_an_unknown_word(hassil, text):
    assert hassil.narrowed.templates_of(text) is None


def test_a_name_the_home_gains_is_matched_once_the_graph_is_rebuilt_for_it(hassil):
    home = hassil.home
    lamp = Entity(id="light.yurt_lamp", name="Yurt Lamp", area_id="kitchen")
    try:
        hassil.use_home(dataclasses.replace(home, entities=[*home.entities, lamp]), wait=True)
        assert hassil.narrowed is not None and hassil.narrowed.graph is hassil.graph
        assert hassil.narrowed.templates_of("turn on the yurt lamp")
        assert narrowed(hassil, "turn on the yurt lamp") == ("HassTurnOn", [("name", "Yurt Lamp")])
    finally:
        hassil.use_home(home, wait=True)
    assert hassil.narrowed.templates_of("turn on the yurt lamp") is None
