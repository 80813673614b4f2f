"""German misheard by sound is repaired by its sound in German (eSpeak NG's phonemes), on the
real home-assistant-intents German grammar: "Die Schät ist S." is "Wie spät ist es?" (German
says sp as schp; "S" and "es" are one sound), chatter still matches nothing, and English keeps
its metaphone. The heard texts are what Whisper base wrote for espeak-ng's German
(tests/test_languages_e2e.py, at VAD start offsets 0-30 ms apart)."""

from __future__ import annotations

import shutil

import pytest
from home_stages import MULTILINGUAL_HOME, home_hassil
from voiced_plugins.intent_hassil.phonemes import Phonemes, for_language, respelled

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng")


@pytest.fixture(scope="module")
def german():
    stage = home_hassil(MULTILINGUAL_HOME, language="de")
    yield stage
    stage.close()


def test_words_sound_in_their_language():
    german = for_language("de")
    assert german is not None
    said = german.of(["spät", "Schät", "S", "es", "schalt"])
    assert said["spät"] == "ʃpɛːt" and said["S"] == said["es"] == "ɛs"
    alike = german.alike("schät", ["spät", "schalt"])
    assert alike["spät"] > alike["schalt"]  # metaphone: SXT is as near SPT as SXLT


def test_english_keeps_metaphone_and_no_espeak_means_spelling_alone():
    assert for_language("en") is None and for_language("en-GB") is None
    assert for_language("zh-CN") is None  # no repair graph for words without spaces
    assert for_language("de", program="no-such-espeak-ng") is None
    assert for_language("xx-unknown") is None  # espeak-ng speaks no such language


def test_a_batch_that_does_not_line_up_is_read_word_by_word():
    phonemes = Phonemes("de", shutil.which("espeak-ng") or "espeak-ng")
    said = phonemes.of(["licht", "", "küche"])  # an empty line gives espeak-ng nothing to say
    assert said["licht"] == "lɪçt" and said["küche"] == "kyçə"


def test_a_homophone_is_put_right_at_no_cost(german):
    graph = german.graph
    assert dict(graph.similar("s"))["es"] == 1.0
    assert respelled("wie spät ist S", graph) == "wie spät ist es"
    assert respelled("wie spät ist es", graph) == "wie spät ist es"


def test_similar_words_rank_the_same_in_every_process(german):
    ranked = german.graph.similar("schät")
    assert ranked[0][0] == "spät"
    assert list(ranked) == sorted(ranked, key=lambda kv: (-kv[1], kv[0]))  # ties by the word


@pytest.mark.parametrize(
    "heard",
    ["Die Schät ist S.", "Wie schät ist es?", "Wie schädt ist es?", "Wie spät ist S."],
)
def test_the_time_question_misheard_by_sound_is_the_time_question(german, heard):
    found = german.recognize(heard)
    assert found is not None and found.name == "HassGetCurrentTime"
    assert found.data["repair"]["text"].casefold() == "wie spät ist es" and found.text == heard


def test_a_light_command_misheard_by_sound_still_acts_on_the_light(german):
    found = german.recognize("Schalte das Lischt in der Küche an.")
    assert found is not None and found.name == "HassTurnOn"
    assert found.data["entities"] == ["light.kitchen"]


@pytest.mark.parametrize(
    "chatter",
    ["Das Wetter ist heute wirklich schön.", "Das Meta ist heute Mitgliedsschul.",
     "Nasmete ist heute Mitgliedschule.", "Wie schön es ist!", "Wie schön ist es?",
     "Die Katze schläft auf dem Sofa.", "Ich gehe morgen einkaufen.", "Die Schule ist aus.",
     "Wie geht es dir?", "Es ist spät geworden."],
)  # fmt: skip
def test_german_chatter_matches_nothing(german, chatter):
    assert german.recognize(chatter) is None
