"""The constrained search lets a sentence open with the home's skip words: people say
"could you ..." or "um, ..." before a command, hassil skips those words, and the audio says
them, so a search that must start on a template's first word has to spell "could you" with
the home's words. On tiny.en's real tokenizer and config/home.yaml's grammar; the decoder
is a table of next-token log-probabilities (the design's fake Decoder)."""

from __future__ import annotations

import pytest
from table_decoder import saying_text as saying
from voiced_plugins.asr_whisper.constrained import (
    commands_found,
    constrained_decode,
)


@pytest.mark.parametrize(
    ("said", "opening", "sentence"),
    [
        ("Could you turn on the kitchen light", "Could you", "turn on the kitchen light"),
        ("Um, turn off the lights in the bedroom", "Um", "turn off the lights in the bedroom"),
    ],
)
def test_a_sentence_may_open_with_the_homes_skip_words(
    hassil, en_tokenizer, home_grammar, said, opening, sentence
):
    found = constrained_decode(
        saying(en_tokenizer, said), en_tokenizer, home_grammar, openings=True
    )
    assert found and found[0].text == said
    assert (found[0].opening, found[0].sentence) == (opening, sentence)
    assert hassil.command_meaning(found[0].text) is not None  # hassil skips them too


def test_without_openings_the_search_starts_on_a_templates_first_word(en_tokenizer, home_grammar):
    said = "Could you turn on the kitchen light"
    found = constrained_decode(saying(en_tokenizer, said), en_tokenizer, home_grammar)
    assert all(not c.text.casefold().startswith("could") for c in found)


def test_a_skip_word_opens_a_sentence_only_before_it(en_tokenizer, home_grammar):
    said = "turn on could you the kitchen light"
    found = constrained_decode(
        saying(en_tokenizer, said), en_tokenizer, home_grammar, openings=True
    )
    assert all("could" not in c.text.casefold() for c in found)


def test_a_found_sentence_is_grounded_by_its_own_words_not_its_opening(
    hassil, en_tokenizer, home_grammar
):
    said = saying(en_tokenizer, "Could you turn on the kitchen light")
    heard_chatter = [("Could you believe it", -0.3)]
    chatter = commands_found(said, en_tokenizer, home_grammar, heard_chatter, hassil, openings=True)
    assert chatter.ungrounded == {"turn on the kitchen light"}  # held to the stricter limit
    heard_slip = [("Could you turn on the kitten light", -0.3)]
    found = commands_found(said, en_tokenizer, home_grammar, heard_slip, hassil, openings=True)
    assert found.commands[:1] == ["Could you turn on the kitchen light"]


def test_a_found_command_no_reading_grounds_is_offered_marked(hassil, en_tokenizer, home_grammar):
    """The rescoring holds it to a stricter limit (rescore.DROP_FULL); a sentence too
    short to be grounded at all is not offered."""
    said = saying(en_tokenizer, "turn on the kitchen light")
    grounded = commands_found(
        said, en_tokenizer, home_grammar, [("Turn on the kitten light", -0.3)], hassil
    )
    assert grounded.commands[:1] == ["turn on the kitchen light"]
    assert "turn on the kitchen light" not in grounded.ungrounded
    heard = [("Learn up a kitten bike", -0.3)]  # "kitten" is no word of the sentence
    found = commands_found(said, en_tokenizer, home_grammar, heard, hassil)
    assert "turn on the kitchen light" in found.commands
    assert "turn on the kitchen light" in found.ungrounded
    assert set(found.ungrounded) <= set(found.commands)


@pytest.mark.parametrize(("sentence", "groundable"), [("is it on", False), ("open it", True)])
def test_only_a_sentence_a_reading_could_ground_is_offered_ungrounded(sentence, groundable):
    from voiced_plugins.asr_whisper.constrained import groundable as could_ground

    assert could_ground(sentence, spaced=True, sounds=None) is groundable


def test_an_opening_no_reading_grounds_is_left_off_the_sentence(hassil, en_tokenizer, home_grammar):
    """A phrase of skip words takes any first words: the chatter "I bought a new sonoff plug
    for the garage", heard "I'm all to new son of blood from the garage", was found as "I'd
    like you to turn off the light in the garage"."""
    said = saying(en_tokenizer, "I'd like you to turn on the kitchen light")
    heard = [("I'm all to new on the kitten light", -0.3)]
    found = commands_found(said, en_tokenizer, home_grammar, heard, hassil, openings=True)
    assert found.commands[:1] == ["turn on the kitchen light"]


# -- on real speech (espeak-ng, tiny.en, CTranslate2): the slips are what the model writes ------


@pytest.fixture(scope="module")
def engines(hassil):
    from home_stages import App, loaded
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options

    def engine(openings: bool) -> WhisperCt2Asr:
        return WhisperCt2Asr(
            WhisperCt2Options(recognition={"search_openings": openings}), App(hassil)
        )

    with loaded({"plain": engine(False), "openings": engine(True)}) as made:
        yield made


def meaning(hassil, text: str):
    intent = hassil.recognize(text)
    return None if intent is None else (intent.name, intent.data["entities"])


@pytest.mark.slow
@pytest.mark.parametrize(
    ("spoken", "voice", "wpm", "wanted"),
    [  # what the search heard without openings:
        ("could you turn off the lights in the bedroom", "en-029", 160,
         ("HassTurnOff", ["light.bedside_lamp"])),  # "Could you talk of the lights in the bedroom?"
        ("would you lock the front door", "en-us", 185,
         ("HassTurnOn", ["lock.front_door"])),  # "What is the front door": another intent
    ],
)  # fmt: skip
def test_a_command_said_after_could_you_is_heard_with_it(
    engines, hassil, spoken, voice, wpm, wanted
):
    from speech import espeak

    audio = espeak(spoken, voice, wpm)
    before = engines["plain"].transcribe(audio)
    assert meaning(hassil, before.text) != wanted, before.text  # the slip is real
    after = engines["openings"].transcribe(audio)
    assert meaning(hassil, after.text) == wanted, after.data
    assert after.text in after.data["rescored"]["constrained"]  # the search found it


@pytest.mark.slow
@pytest.mark.parametrize(
    "chatter",
    [
        "could you believe how cold the kitchen was",
        "um, I think the front door needs paint",
        "please tell me the bedroom lamp is not broken again",
    ],
)
def test_chatter_that_opens_like_a_request_stays_free_text(engines, hassil, chatter):
    from speech import espeak

    transcript = engines["openings"].transcribe(espeak(chatter, "en-us", 160))
    assert transcript.text
    assert hassil.recognize(transcript.text) is None, transcript.text
