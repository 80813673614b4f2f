"""A rescored command must say what was heard: chatter around a name of the home is no
command made of its middle. The readings are tiny.en's of fresh-set speech (measured)."""

from __future__ import annotations

import pytest
from home_stages import SentencesHome
from voiced_plugins.asr_whisper.rescore import pick_rescored, unsaid_edges
from voiced_plugins.intent_hassil.normalize import FILLER_WORDS


@pytest.mark.parametrize(
    ("heard", "found", "unsaid"),
    [
        ("who keeps leaving the Shelley relay on.", "the shelly relay on", "who keeps leaving"),
        ("turning on the sonas always cheers me up.", "turn on the Sonos", "always cheers me up"),
        (
            "Turning on the wall, Skans always chairs me up.",
            "turn on the wall, sconce",
            "always chairs me up",
        ),
    ],
)
def test_chatter_around_a_command_is_said_to_leave_words_unsaid(heard, found, unsaid):
    assert unsaid_edges(heard, found, FILLER_WORDS) == unsaid


@pytest.mark.parametrize(
    ("heard", "found"),
    [
        ("Okay, so let's tramp on the solar.", "next track on the sonos"),  # respelled
        ("Okay, so let's switch on me to stress on machine.", "switch on the espresso machine"),
        ("turn the spot like the saw range", "Turn the spotlights orange"),
        ("is machine locked locked locked.", "is the shed lock locked"),  # a loop's repeats
        (
            "Okay, set up time with 4 seconds, set up time with 4 seconds",
            "Set a timer for 7 seconds",
        ),
        ("You are not a feeling then.", "turn on the ceiling fan"),
        ("Since the timer for 24 minutes.", "Set a timer for 24 minutes"),
        ("turn on the kitchen lights please thank you", "turn on the kitchen lights"),
    ],
)
def test_a_misheard_command_leaves_nothing_unsaid(heard, found):
    assert unsaid_edges(heard, found, FILLER_WORDS) == ""


def test_the_homes_skip_words_are_not_counted():
    heard = "okay could you please just turn on the kitchen lights"
    assert unsaid_edges(heard, "turn on the kitchen lights", FILLER_WORDS) == ""
    assert unsaid_edges(heard, "turn on the kitchen lights") == "okay could you please just"


def test_a_commands_own_opening_phrase_says_nothing_of_the_reading():
    """The constrained search may open a sentence with skip words; lined up by them, "I'd
    like you to tell me the time" covered a reading of "turn the brightness in our Yurt to
    minimum" (an espeak-ng voice, fresh seed 31284)."""
    heard = "Talk the right to the sea, how that you ought to be the moon."
    found = "I'd like you to tell me the time"
    assert unsaid_edges(heard, found, FILLER_WORDS) == "talk right to sea how that you ought"
    opened = ("Could you switch off in a Christmas tree?", "Can you switch off the Christmas tree")
    assert unsaid_edges(*opened, FILLER_WORDS) == ""


def test_a_rescored_command_that_leaves_heard_words_unsaid_is_refused():
    """1.76 below the reading: within the score's limit, which cannot tell."""
    scores = {
        "who keeps leaving the Shelley relay on.": -0.33,
        "the shelly relay on": -2.09,
        "Is this shall we relate on?": -0.65,
        "is the shelly relay on": -1.55,
    }
    score = lambda texts: [scores.get(t, -5.0) for t in texts]  # noqa: E731
    home = SentencesHome({"the shelly relay on": "relay on"})
    picked, why = pick_rescored(["who keeps leaving the Shelley relay on."], home, score)
    assert picked is None
    assert (
        why == "'the shelly relay on' leaves 'who keeps leaving' unsaid: heard, around the command"
    )
    home = SentencesHome({"is the shelly relay on": "relay state"})
    picked, _ = pick_rescored(["Is this shall we relate on?"], home, score, skip=FILLER_WORDS)
    assert picked is not None and picked.text == "is the shelly relay on"
