"""Home-aware recognition on real speech: N-best, the prompted retry, loop cutting.

The slips are what tiny.en really writes for these espeak-ng voices (measured, issue 15).
"""

from __future__ import annotations

import pytest
from home_stages import App, home_hassil, loaded
from speech import espeak, noise, silence
from voiced_plugins.asr_whisper.choose import (
    Choice,
    Hypothesis,
    choose,
    close_enough,
    pick_retry,
)
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
from voiced_plugins.intent_hassil import HassilIntent

PLAIN = {"hypotheses": 1, "retry": False, "rescore": False}
"""Whisper's reading and name snapping: none of the home-aware steps."""


@pytest.fixture(scope="module")
def snapping() -> HassilIntent:
    """The stage with name snapping only: what the prompted retry was built on."""
    return home_hassil(repair=False)


@pytest.fixture(scope="module")
def engines(hassil, snapping):
    with loaded(
        {
            "plain": WhisperCt2Asr(WhisperCt2Options(recognition=PLAIN), App(snapping)),
            "retry": WhisperCt2Asr(
                WhisperCt2Options(recognition={"rescore": False}), App(snapping)
            ),
            "home": WhisperCt2Asr(WhisperCt2Options(), App(hassil)),
        }
    ) as made:
        yield made


@pytest.mark.parametrize(
    ("spoken", "voice", "wpm", "intent_name"),
    [
        ("lock the front door", "en-us", 175, "HassTurnOn"),  # heard: "Like the front door."
        ("set the brightness in the office to 40 percent", "en-sc", 160, "HassLightSet"),
    ],  # heard: "Set the rightness in the office to 40%."
)
def test_the_prompted_retry_recovers_a_misheard_command(
    engines, snapping, spoken, voice, wpm, intent_name
):
    audio = espeak(spoken, voice, wpm)
    plain = engines["plain"].transcribe(audio)
    assert snapping.recognize(plain.text) is None, plain.text  # the slip is real
    transcript = engines["retry"].transcribe(audio)
    intent = snapping.recognize(transcript.text)
    assert intent is not None and intent.name == intent_name, transcript.text
    assert transcript.data["hypothesis"]["retried"] is True
    assert transcript.data["hypothesis"]["index"] == -1
    assert "retry" in transcript.data["hypothesis"]["why"]


@pytest.mark.parametrize(
    "chatter",
    [
        "I left the lights on in the kitchen yesterday",
        "the weather in the garden was lovely this morning",
        "my brother wants to paint his bedroom blue",
    ],
)
def test_chatter_stays_chatter_through_the_n_best_list_and_the_retry(engines, hassil, chatter):
    transcript = engines["home"].transcribe(espeak(chatter, "en-us", 160))
    assert transcript.text
    assert hassil.recognize(transcript.text) is None, transcript.text
    assert transcript.data["hypothesis"]["index"] == 0
    assert len(transcript.data["hypotheses"]) >= 1


@pytest.mark.parametrize("audio", [silence(1.5), noise(1.5, 0.05)], ids=["silence", "noise"])
def test_silence_and_noise_stay_no_speech_with_the_home_prompt(engines, audio):
    transcript = engines["home"].transcribe(audio)
    assert transcript.no_speech
    assert transcript.text == ""


def test_a_command_heard_right_needs_no_retry(engines):
    transcript = engines["home"].transcribe(espeak("turn off the reading lamp", "en-us", 175))
    assert transcript.data["hypothesis"] == {
        "index": 0,
        "retried": False,
        "why": "top hypothesis is a command",
    }


class Commands:
    """An intent stage that knows two commands (choose() only asks ``is_command``)."""

    def is_command(self, text: str, exact: bool = False) -> bool:
        return text in ("turn on the porch light", "open the garage door")

    def prompt_words(self) -> str:
        return "Porch Light, Garage Door."


def test_the_best_command_within_the_margin_wins_over_a_top_that_is_no_command():
    heard = [
        Hypothesis("switch on the port slide", -0.30),
        Hypothesis("turn on the porch light", -0.45),
    ]
    choice = choose(heard, Commands(), margin=0.3)
    assert choice.index == 1 and "is a command" in choice.why
    assert choose(heard, Commands(), margin=0.1) == Choice(
        0, "no hypothesis within the margin is a command: top one as free text"
    )
    assert choose(heard, None, margin=1.0).index == 0  # no intent stage: the top one


def test_a_retry_counts_only_when_it_says_nearly_what_was_first_heard():
    assert close_enough("Like the front door.", "Lock the front door.")
    assert not close_enough("my brother paints his bedroom", "Turn on the Bedside Lamp.")


def test_the_retry_takes_a_command_that_rereads_any_first_hypothesis_and_needs_no_repair():
    first = [Hypothesis("do not follow my life", -0.5), Hypothesis("do not fall the light", -0.6)]
    retried = [
        Hypothesis("open the garage door", -0.2),
        Hypothesis("turn on the porch light", -0.3),
    ]
    assert pick_retry(retried, first, Commands(), margin=0.3) is None  # no re-reading
    first.append(Hypothesis("turn on the porch lie", -0.7))
    assert pick_retry(retried, first, Commands(), margin=0.3) == retried[1]
    assert pick_retry(retried, first, Commands(), margin=0.05) is None  # outside the margin
