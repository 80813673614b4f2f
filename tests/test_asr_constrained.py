"""Decoding within the home's sentences on real speech (espeak-ng, tiny.en): the slips are
what the model really writes for these voices (measured, issue 15); the home is
config/home.yaml. The prompted retry is off, so each reading comes from one technique."""

from __future__ import annotations

from itertools import pairwise

import pytest
from home_stages import App, loaded
from speech import espeak
from voiced_plugins.asr_whisper.constrained import START, TokenGrammar, first_words, grounded
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engines(hassil):
    with loaded(
        {
            "rescore": WhisperCt2Asr(
                WhisperCt2Options(recognition={"retry": False, "constrained": False}), App(hassil)
            ),
            "constrained": WhisperCt2Asr(
                WhisperCt2Options(recognition={"retry": False}), App(hassil)
            ),
        }
    ) as made:
        yield made


@pytest.mark.parametrize(
    ("spoken", "voice", "wpm", "intent_name", "entities"),
    [  # heard, with sentence repair and the rescoring of nearby sentences:
        ("turn off the lights in the bedroom", "en-029", 185, "HassTurnOff",
         ["light.bedside_lamp"]),  # "Talk after I've seen the bedroom."
        ("turn on the kitchen light", "en-029", 185, "HassTurnOn",
         ["light.kitchen"]),  # "So on the kitchen light."
        ("unlock the front door", "en-gb", 175, "HassTurnOff",
         ["lock.front_door"]),  # "and lock the front door."
    ],
)  # fmt: skip
def test_decoding_within_the_homes_sentences_hears_the_command(
    engines, hassil, spoken, voice, wpm, intent_name, entities
):
    audio = espeak(spoken, voice, wpm)
    before = engines["rescore"].transcribe(audio)
    assert hassil.recognize(before.text) is None, before.text  # the slip is real
    transcript = engines["constrained"].transcribe(audio)
    intent = hassil.recognize(transcript.text)
    assert intent is not None, transcript.data
    assert (intent.name, intent.data["entities"]) == (intent_name, entities)
    rescored = transcript.data["rescored"]
    assert transcript.text == rescored["text"]
    assert transcript.text in rescored["constrained"]  # the search found it
    assert rescored["free_score"] - rescored["score"] < 0.8
    assert transcript.data["hypothesis"]["why"].startswith("rescored")


@pytest.mark.parametrize(
    "chatter",
    [
        "I left the lights on in the kitchen all night",
        "turn on the radio",  # no radio in this home
        "the office is cold this morning",
        "is the coffee ready yet",
    ],
)
def test_chatter_stays_free_text_though_the_search_finds_home_sentences(engines, hassil, chatter):
    transcript = engines["constrained"].transcribe(espeak(chatter, "en-us", 160))
    assert transcript.text
    assert hassil.recognize(transcript.text) is None, transcript.text
    assert "text" not in transcript.data["rescored"], transcript.data["rescored"]


def test_a_word_is_spelled_as_whisper_writes_it(engines, hassil):
    engine = engines["constrained"]
    tokenizer = engine._tokenizer(None)
    grammar = TokenGrammar(hassil.command_graph().following, {"thirty"}, tokenizer)
    spelled = {tokenizer.decode(t) for t in grammar.spellings("whats")}
    assert spelled == {" whats", " Whats", " what's", " What's"}
    numbers = {tokenizer.decode(t) for t in grammar.spellings("<#>")}
    assert {" 30", " thirty", " Thirty", " 100"} <= numbers
    assert {tokenizer.decode(t) for t in grammar.spellings("%")} == {"%", " %"}
    after_start = grammar.after(START)  # every first word of the home's sentences
    assert tokenizer.encode(" Turn")[0] in after_start.children


def test_another_first_word_is_tried_where_whisper_slips_most(engines, hassil):
    tokenizer = engines["constrained"]._tokenizer(None)
    grammar = TokenGrammar(hassil.command_graph().following, set(), tokenizer)
    likely = {"turn": -1.0, "switch": -2.0}
    offered = first_words(grammar, ["on the kitchen light"], lambda w: likely.get(w, -9.0), 2)
    assert offered[:2] == ["turn on the kitchen light", "switch on the kitchen light"]
    assert all(hassil.command_meaning(text) for text in offered[:2])


def test_the_first_words_offered_are_the_likeliest_that_make_a_command(engines, hassil):
    """ "Go on the chandelier" (8 kHz en-029): the audio's first token fits "is", "open" and
    "our" better than "turn", and none of those makes a command."""
    tokenizer = engines["constrained"]._tokenizer(None)
    grammar = TokenGrammar(hassil.command_graph().following, set(), tokenizer)
    likely = {"is": -0.5, "open": -0.7, "turn": -1.0, "switch": -2.0}

    def is_command(text: str) -> bool:
        return hassil.command_meaning(text) is not None

    offered = first_words(
        grammar, ["on the kitchen light"], lambda w: likely.get(w, -9.0), 1, is_command
    )
    assert offered == ["turn on the kitchen light", "activate the kitchen light"]
    # in front of the words or instead of the first: a slip of "is" heard "in"
    likely = {"in": -0.5, "is": -1.0, "are": -1.5}
    offered = first_words(
        grammar, ["in the front door locked"], lambda w: likely.get(w, -9.0), 1, is_command
    )
    assert offered == ["is the front door locked"]


def _pairs_of_one_template(graph, text: str) -> int:
    words = [START, *text.split(), "</s>"]
    said = -1
    for before, word in pairwise(words):
        said &= graph.templates.get((before, word), 0)
    return said


def test_the_search_keeps_to_sentences_one_template_says(hassil):
    graph = hassil.command_graph()
    assert graph.allows("the", "next")  # a pair of the home's graph ("...the next track")
    assert _pairs_of_one_template(graph, "what is the date today")
    assert not _pairs_of_one_template(graph, "what is the next")  # pairs of two templates
    assert _pairs_of_one_template(graph, "turn on the kitchen light")


def test_a_found_sentence_must_share_a_word_with_what_the_decoder_heard():
    heard = ["But the candle on for the...", "But the candle on forty."]
    assert not grounded("What can I say", heard)  # chatter: no word in common
    assert grounded("turn on the kettle", heard)
    assert grounded("what is the date today", ["What is the next domain?"])
    assert not grounded("What can I say", ["I will speak to you, and", "Be me on"])  # "I"


def test_a_narrowband_slip_is_found_within_one_template(hassil):
    """An 8 kHz "what is the date today" (en-us+f3, 160 wpm) is heard "What is the next
    domain?"; the graph's pairs alone let "what is the next..." fill the search's beam."""
    import numpy as np

    from voiced.audio import float_to_pcm16, resample

    pcm = espeak("what is the date today", "en-us+f3", 160)
    wide = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
    audio = float_to_pcm16(resample(resample(wide, 16000, 8000), 8000, 16000))
    engines = {
        "pairs": WhisperCt2Asr(
            WhisperCt2Options(recognition={"retry": False, "search_one_template": False,
                                           "search_beam": 6}), App(hassil)),
        "one template": WhisperCt2Asr(WhisperCt2Options(recognition={"retry": False}), App(hassil)),
    }  # fmt: skip
    with loaded(engines):
        before = engines["pairs"].transcribe(audio)
        after = engines["one template"].transcribe(audio)
    assert hassil.recognize(before.text) is None, before.data
    intent = hassil.recognize(after.text)
    assert intent is not None and intent.name == "HassGetCurrentDate", after.data
    assert after.text in after.data["rescored"]["constrained"]  # the search found it


def test_the_same_entities_named_another_way_mean_the_same(hassil):
    fans = hassil.command_meaning("turn on the bedroom fans")  # its area and domain
    assert fans is not None and fans == hassil.command_meaning("turn on the bedroom fan")
    assert fans != hassil.command_meaning("turn off the bedroom fan")
    assert hassil.command_meaning("set a timer for 5 minutes") != hassil.command_meaning(
        "set a timer for 8 minutes"
    )
