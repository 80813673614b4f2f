"""The held-out recognition set (benchmarks/testset.py): a home of its own, right answers."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

from benchmarks import testset
from benchmarks.recognition import judge

HOME = Path(__file__).parents[1] / "config" / "home.yaml"


@pytest.fixture(scope="module")
def stage() -> HassilIntent:
    stage = HassilIntent(HassilOptions(home="", sentences=[]))
    stage.load()
    stage.use_home(testset.HELDOUT_HOME)
    return stage


def test_the_held_out_home_shares_no_entity_name_with_the_config_home():
    config = yaml.safe_load(HOME.read_text(encoding="utf-8"))
    ours = {e["name"].casefold() for e in testset.HELDOUT_HOME["entities"]}
    assert not ours & {e["name"].casefold() for e in config["entities"]}


@pytest.mark.parametrize(("text", "name", "entities", "slots"), testset.HELDOUT_COMMANDS)
def test_every_command_read_cleanly_gives_its_expected_intent(stage, text, name, entities, slots):
    expected = {"name": name, "entities": sorted(entities), "slots": slots}
    intent = stage.recognize(text)
    assert judge(intent, expected) == "right", (text, intent)


@pytest.mark.parametrize("text", testset.HELDOUT_CHATTER)
def test_the_chatter_is_no_command_on_this_home(stage, text):
    assert judge(stage.recognize(text), None) == "right", text
