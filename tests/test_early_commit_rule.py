"""Which speculative transcripts may end an utterance early: real hassil on config/home.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

from voiced.early_commit import complete_command
from voiced.intents import Intent

REPO = Path(__file__).parents[1]
TEMPLATES = ["hassil"]


@pytest.fixture(scope="module")
def hassil() -> HassilIntent:
    stage = HassilIntent(
        HassilOptions(
            home=str(REPO / "config" / "home.yaml"), sentences=[str(REPO / "config" / "sentences")]
        )
    )
    stage.load()
    return stage


def commits(hassil: HassilIntent, text: str) -> bool:
    return complete_command(hassil.recognize(text), text, TEMPLATES)


@pytest.mark.parametrize(
    "text",
    [
        "Turn on the kitchen light.",
        "turn off the bedroom fan",
        "Set a timer for five minutes.",
        "What time is it?",
        "Turn off the kitchen lights.",  # a place and a kind of device
        "turn off the lights in the kitchen",
        "what is the temperature in the bedroom",  # the intent names its kind: a thermostat
        "Set the temperature in the hallway to 21 degrees.",
    ],
)
def test_a_complete_command_for_this_home_commits_early(hassil, text):
    assert commits(hassil, text)


@pytest.mark.parametrize(
    "text",
    [
        "Turn off the kitchen.",  # a place alone: "... lights and the fan" may follow
        "Turn off the lights.",  # a kind alone: "... in the bedroom" may follow
        "Set a timer for",  # no duration: nothing matches
        "Turn on the",
        "Turn on the kitchen light and",  # announces more
        "Turn on the kitchen light,",  # Whisper's comma: the speech trailed off
        "What is the meaning of life?",  # free speech waits for the LLM's normal endpoint
        "what is the temperature",  # the kind alone: "... in the bedroom" may follow
    ],
)
def test_half_a_command_or_free_speech_waits_for_the_normal_endpoint(hassil, text):
    assert not commits(hassil, text)


def test_a_fuzzy_match_or_another_recognizer_never_commits_early():
    exact = Intent("HassTurnOn", {"name": "Kitchen Light"}, recognizer="hassil")
    assert complete_command(exact, "turn on the kitchen light", TEMPLATES)
    fuzzy = Intent("HassTurnOn", {"name": "Kitchen Light"}, confidence=0.86, recognizer="hassil")
    assert not complete_command(fuzzy, "turn on the kitchn light", TEMPLATES)
    llm = Intent("HassTurnOn", {"name": "Kitchen Light"}, recognizer="llm")
    assert not complete_command(llm, "turn on the kitchen light", TEMPLATES)
    assert not complete_command(None, "turn on the kitchen light", TEMPLATES)


def test_a_place_from_the_sites_area_is_not_a_place_that_was_said():
    stage = HassilIntent(
        HassilOptions(home=str(REPO / "config" / "home.yaml"), site_areas={"kitchen": "Kitchen"})
    )
    stage.load()
    from voiced.context import RunContext
    from voiced.intents import Transcript

    def hear(text: str) -> Intent | None:
        return stage.voiced_recognize(Transcript(text), RunContext(site_id="kitchen"))

    lights = hear("Turn off the lights.")
    assert lights is not None and lights.slots["area"] == "Kitchen"  # from the site
    # "... in the bedroom" may follow: acting now would switch off the kitchen
    assert not complete_command(lights, "Turn off the lights.", TEMPLATES)
    said = "Turn off the lights in the bedroom."
    assert complete_command(hear(said), said, TEMPLATES)
