"""The recognizer's steps, profile and budget, each rule on the table-backed fake decoder
(tests/table_decoder.py): what each step fixes, what it leaves alone, which steps run."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from table_decoder import SPEECH, TableDecoder, TableHome, listen, steps
from voiced_plugins.asr_whisper.listen.beside import scored_beside
from voiced_plugins.asr_whisper.listen.options import RecognitionOptions
from voiced_plugins.asr_whisper.listen.rescoring import beam_of, until_spent
from voiced_plugins.asr_whisper.listen.state import FULL, Utterance, Window

from voiced.api.recognition import Hypothesis

HOME = {
    "turn on the kitchen lights": "HassTurnOn light.kitchen",
    "turn off the kitchen lights": "HassTurnOff light.kitchen",
    "turn on the porch light": "HassTurnOn light.porch",
}
FAR = {
    "turn on the kitchen lights": -6.0,
    "turn off the kitchen lights": -6.5,
    "turn on the porch light": -7.0,
}
"""The home's sentences scored against chatter: far below what was said."""
KITTEN = "Turn on the kitten lights."
KITCHEN = "Turn on the kitchen lights."
CHATTER = "I left the kitchen lights on all night."


def home(**tables) -> TableHome:
    return TableHome(dict(HOME), **tables)


def utterance(decoder: TableDecoder, asked: TableHome | None) -> Utterance:
    """An utterance of ``SPEECH`` on ``decoder``, asking the home ``asked``."""
    return Utterance(decoder, asked, SPEECH, "en", RecognitionOptions(), FULL)


# -- the first reading: N-best and the home's choice ------------------------------------------


def test_a_command_within_the_margin_of_the_top_reading_is_chosen():
    decoder = TableDecoder({"first": [(KITTEN, -0.30), (KITCHEN, -0.45)]})
    transcript, decision = listen(decoder, home())
    assert transcript.text == KITCHEN
    assert decision["step"] == "first"
    assert transcript.data["hypothesis"]["index"] == 1
    assert steps(decision) == ["first", "fallback"]  # a command: no home step runs
    assert "generate first x3" in decoder.calls


def test_a_command_further_below_than_the_margin_is_not_chosen():
    decoder = TableDecoder({"first": [(KITTEN, -0.30), (KITCHEN, -0.70)]})
    transcript, _ = listen(decoder, home(), rescore=False, retry=False)
    assert transcript.text == KITTEN
    assert transcript.data["hypothesis"]["why"].startswith("no hypothesis within the margin")


def test_speech_the_fitted_window_calls_silence_is_read_again_in_the_full_window():
    # Whisper's no-speech rule was made for its 30 s window: Whisper base gave espeak-ng's
    # "Welches Datum haben wir heute?" 0.63 in a 5 s window, 0.15 in 30 s
    table = {"first": [("Milch, Stadium, haben.", -1.3)], "full": [(KITCHEN, -0.8)]}
    decoder = TableDecoder(table, no_speech_in={5: 0.63, 30: 0.15})
    transcript, decision = listen(decoder, home())
    assert transcript.text == KITCHEN and transcript.data["window_s"] == 30
    assert decision["steps"][0]["outcome"].endswith("speech in the full one")


def test_silence_in_both_windows_stays_silence_and_a_sure_silence_is_not_read_again():
    quiet = TableDecoder({"first": [("Thank you.", -1.3)]}, no_speech_prob=0.7)
    transcript, _ = listen(quiet, home())
    assert transcript.text == "" and transcript.data["window_s"] == 5
    assert quiet.asked("encode 30")
    sure = TableDecoder({"first": [("Thank you.", -1.3)]}, no_speech_prob=0.95)
    transcript, _ = listen(sure, home())
    assert transcript.text == "" and not sure.asked("encode 30")  # above no_speech_reject
    confident = TableDecoder({"first": [(CHATTER, -0.3)]}, no_speech_prob=0.7)
    transcript, _ = listen(confident, home(), rescore=False, retry=False)
    assert transcript.text == CHATTER and not confident.asked("encode 30")


# -- the temperature fallback -----------------------------------------------------------------


def test_a_decode_below_the_log_probability_threshold_is_sampled_again_and_its_command_kept():
    decoder = TableDecoder(
        {"first": [("Turn on the kit and lights.", -1.4)], "t0.2": [(KITCHEN, -0.6)]}
    )
    transcript, decision = listen(decoder, home(), rescore=False, retry=False)  # no home step
    assert transcript.text == KITCHEN
    assert decision["step"] == "fallback"
    assert decoder.asked("generate t0.2") and not decoder.asked("generate t0.4")


def test_an_improbable_decode_is_left_to_the_home_steps_that_read_it_after():
    table = {
        "first": [("Turn on the kit and lights.", -1.4)],
        "t0.2": [(KITCHEN, -0.6)],
        "retry": [(KITCHEN, -0.5)],
    }
    decoder = TableDecoder(table)
    transcript, decision = listen(decoder, home(), rescore=False)
    assert transcript.text == KITCHEN and decision["step"] == "retry"
    assert decision["steps"][1]["outcome"] == "left to the home steps: avg log-prob -1.40 < -1.0"
    assert not decoder.asked("generate t")
    fallback_on = TableDecoder(table)
    transcript, decision = listen(fallback_on, home(), rescore=False, fallback=True)
    assert transcript.text == KITCHEN and decision["step"] == "fallback"
    assert fallback_on.asked("generate t0.2") and not fallback_on.asked("generate retry")


def test_an_improbable_mandarin_decode_is_left_to_the_home_steps_too():
    table = {
        "first": [("打開握式的燈", -1.4)],
        "t0.2": [(KITCHEN, -0.6)],
        "retry": [(KITCHEN, -0.5)],
    }
    decoder = TableDecoder(table)
    _, decision = listen(decoder, home(), language="zh", rescore=False)
    assert decision["steps"][1]["outcome"].startswith("left to the home steps")
    assert not decoder.asked("generate t")


def test_an_improbable_decode_of_another_language_is_sampled_after_the_homes_first_look():
    table = {"first": [("Schalte das Lickt ein.", -1.4)], "t0.2": [(KITCHEN, -0.6)]}
    decoder = TableDecoder(table, {"schalte das lickt ein": -0.4, **FAR})
    transcript, decision = listen(decoder, home(), language="de")
    assert transcript.text == KITCHEN and decision["step"] == "fallback"
    assert decoder.asked("generate t0.2")
    assert steps(decision) == ["first", "fallback", "rescore", "fallback"]  # a command
    assert decision["steps"][1]["outcome"].startswith("after the home's first look")


def test_an_improbable_decode_the_homes_first_look_reads_as_a_command_is_not_sampled():
    table = {"first": [(KITTEN, -1.4)], "t0.2": [(KITCHEN, -0.6)]}
    scores = {"turn on the kitten lights": -0.5, "turn on the kitchen lights": -0.9}
    decoder = TableDecoder(table, scores)
    transcript, decision = listen(decoder, home(), language="de")
    assert transcript.text == "turn on the kitchen lights" and decision["step"] == "rescore"
    assert steps(decision) == ["first", "fallback", "rescore"]
    assert not decoder.asked("generate t")


def test_samples_drawn_after_the_first_look_are_read_by_the_rescoring_too():
    table = {"first": [("Schalte das Lickt ein.", -1.4)], "t0.2": [(KITTEN, -0.6)]}
    scores = {"turn on the kitten lights": -0.5, "turn on the kitchen lights": -0.9}
    near = {"turn on the kitten lights": [KITCHEN]}  # nothing near the first reading
    decoder = TableDecoder(table, scores)
    transcript, decision = listen(decoder, home(near=near), language="de", retry=False)
    assert steps(decision) == ["first", "fallback", "rescore", "fallback", "rescore"]
    assert transcript.text == KITCHEN and decision["step"] == "rescore"


def test_a_loop_is_sampled_again_even_where_the_home_steps_read_after_it():
    table = {"first": [("On on on on on on on on on on on on.", -0.2)], "t0.2": [(KITCHEN, -0.6)]}
    decoder = TableDecoder(table, loops={"first": "12 tokens, 1 distinct"})
    transcript, decision = listen(decoder, home())
    assert transcript.text == KITCHEN and decision["step"] == "fallback"
    assert steps(decision) == ["first", "fallback"]  # a command: no home step runs


def test_a_confident_decode_is_not_sampled_again():
    decoder = TableDecoder({"first": [(CHATTER, -0.4)]})
    _, decision = listen(decoder, home(), rescore=False, retry=False)
    assert decision["steps"][1]["outcome"] == "passed Whisper's thresholds"
    assert not decoder.asked("generate t")


# -- rescoring ---------------------------------------------------------------------------------


def test_rescoring_finds_the_command_the_audio_nearly_says():
    scores = {"turn on the kitten lights": -0.5, "turn on the kitchen lights": -0.9}
    decoder = TableDecoder({"first": [(KITTEN, -0.5)]}, scores)
    transcript, decision = listen(decoder, home())
    assert transcript.text == "turn on the kitchen lights"
    assert decision["step"] == "rescore"
    assert steps(decision) == ["first", "fallback", "rescore"]  # fixed: no retry
    assert transcript.data["rescored"]["free_score"] == -0.5


def test_rescoring_keeps_chatter_free_when_every_sentence_of_the_home_scores_far_below():
    decoder = TableDecoder(
        {"first": [(CHATTER, -0.4)], "retry": [("Kitchen lights on all night.", -0.5)]},
        {"i left the kitchen lights on all night": -0.4, **FAR},
    )
    transcript, decision = listen(decoder, home())
    assert transcript.text == CHATTER
    assert decision["step"] == "first"
    assert steps(decision) == ["first", "fallback", "rescore", "retry", "second_look"]
    assert "below what was heard" in transcript.data["rescored"]["why"]


def test_rescoring_refuses_two_commands_that_score_alike():
    scores = {
        "turn on the kitten lights": -0.5,
        "turn on the kitchen lights": -0.9,
        "turn off the kitchen lights": -1.0,
    }
    decoder = TableDecoder({"first": [(KITTEN, -0.5)]}, scores)
    transcript, _ = listen(decoder, home(), retry=False)
    assert transcript.text == KITTEN
    assert transcript.data["rescored"]["why"].endswith("score alike and mean different things")


def test_the_homes_sentences_near_the_readings_are_scored_while_the_search_runs():
    searching = threading.Event()

    class Scoring(TableDecoder):
        def forced_scores(self, encoded, language, texts, frames):
            assert searching.wait(5), "scored before the search, not beside it"
            return super().forced_scores(encoded, language, texts, frames)

    scores = {"turn on the kitten lights": -0.5, "turn on the kitchen lights": -0.9}
    u = utterance(Scoring({"first": [(KITTEN, -0.5)]}, scores), home())
    window = Window(("encoded", 5), 5, 200)
    with scored_beside(u, [Hypothesis(KITTEN, -0.5)], window):
        searching.set()  # the search runs here
    assert window.scores == {
        KITTEN: -0.5,  # the top reading, which the home's sentences are measured against
        "turn on the kitchen lights": -0.9,
        "turn off the kitchen lights": -9.0,
        "turn on the porch light": -9.0,
    }


def test_a_failure_of_the_scoring_beside_the_search_is_raised_not_lost():
    class Broken(TableDecoder):
        def forced_scores(self, encoded, language, texts, frames):
            raise RuntimeError("the decoder failed")

    u = utterance(Broken({"first": [(KITTEN, -0.5)]}), home())
    heard, window = [Hypothesis(KITTEN, -0.5)], Window(("encoded", 5), 5, 200)
    with pytest.raises(RuntimeError, match="the decoder failed"), scored_beside(u, heard, window):
        pass


def test_nothing_is_scored_beside_the_search_without_nearby_sentences_or_a_gain():
    heard, window = [Hypothesis(KITTEN, -0.5)], Window(("encoded", 5), 5, 200)
    no_home = TableDecoder({"first": [(KITTEN, -0.5)]})
    with scored_beside(utterance(no_home, None), heard, window):
        pass
    # a decoder whose scores and steps share its threads (torch) scores after the search
    shared = TableDecoder({"first": [(KITTEN, -0.5)]}, scores_beside_steps=False)
    with scored_beside(utterance(shared, home()), heard, window):
        pass
    assert not no_home.asked("score") and not shared.asked("score")


def test_rescoring_off_leaves_the_home_sentences_unscored():
    decoder = TableDecoder({"first": [(KITTEN, -0.5)]}, {"turn on the kitchen lights": -0.6})
    transcript, decision = listen(decoder, home(), rescore=False, retry=False)
    assert transcript.text == KITTEN and not decoder.asked("score")
    assert steps(decision) == ["first", "fallback"]


# -- the prompted retry ------------------------------------------------------------------------


def test_the_prompted_retry_keeps_a_command_that_re_reads_the_first_decode():
    decoder = TableDecoder(
        {
            "first": [("Pern on the porch light.", -0.5)],
            "retry": [("Turn on the porch light.", -0.3)],
        }
    )
    transcript, decision = listen(decoder, home(), rescore=False)
    assert transcript.text == "Turn on the porch light."
    assert decision["step"] == "retry" and transcript.data["hypothesis"]["retried"]
    assert "encode 30" in decoder.calls  # the full window


def test_no_retry_of_a_sure_reading_that_no_sentence_of_the_home_is_near():
    decoder = TableDecoder({"first": [(CHATTER, -0.4)], "retry": [(KITCHEN, -0.3)]})
    far = home(near={"turn on the porch lamp": ["turn on the porch light"]})  # none near CHATTER
    transcript, decision = listen(decoder, far)
    assert transcript.text == CHATTER
    outcomes = {step["step"]: step["outcome"] for step in decision["steps"]}
    assert outcomes["rescore"] == "no sentence of this home near what was heard"
    assert outcomes["retry"].startswith("not tried: a reading Whisper is sure of")
    assert outcomes["second_look"] == "not tried: no reading of the retry"
    assert not decoder.asked("generate retry") and not decoder.asked("encode 30")


def test_a_sure_reading_of_another_language_that_nothing_is_near_is_still_retried():
    table = {"first": [("Hürfne den Torran.", -0.4)], "retry": [("Öffne den Rollladen.", -0.3)]}
    house = TableHome({"öffne den rollladen": "HassTurnOn cover.rollladen"}, near={"x": []})
    transcript, decision = listen(TableDecoder(table), house, language="de")
    assert transcript.data["rescored"]["why"] == "no sentence of this home near what was heard"
    assert transcript.text == "Öffne den Rollladen." and decision["step"] == "retry"


def test_an_unsure_reading_that_no_sentence_of_the_home_is_near_is_still_retried():
    table = {
        "first": [("Pern on the porch lie.", -1.4)],
        "retry": [("Turn on the porch light.", -0.3)],
    }
    far = home(near={"turn on the porch lamp": ["turn on the porch light"]})
    transcript, decision = listen(TableDecoder(table), far)
    assert transcript.data["rescored"]["why"] == "no sentence of this home near what was heard"
    assert transcript.text == "Turn on the porch light." and decision["step"] == "retry"


def test_the_prompted_retry_drops_a_command_far_from_what_was_first_heard():
    decoder = TableDecoder(
        {"first": [("What a lovely day for a walk.", -0.4)], "retry": [(KITCHEN, -0.3)]}
    )
    transcript, decision = listen(decoder, home(), rescore=False)
    assert transcript.text == "What a lovely day for a walk."
    assert decision["step"] == "first"
    assert transcript.data["hypothesis"]["why"].endswith("gave no command close to it")


# -- the second look ---------------------------------------------------------------------------


def test_the_second_look_rescores_what_the_retry_read():
    decoder = TableDecoder(
        {"first": [("Burn on the kitten.", -0.6)], "retry": [("Turn on the kitchen lice.", -0.7)]},
        {"burn on the kitten": -0.6, "turn on the kitchen lice": -0.7,
         "turn on the kitchen lights": -1.0},
    )  # fmt: skip
    near = {
        "burn on the kitten": ["burn on the kitchen"],  # near the home, no command
        "turn on the kitchen lice": ["turn on the kitchen lights"],
    }
    transcript, decision = listen(decoder, home(near=near))
    assert transcript.text == "turn on the kitchen lights"
    assert decision["step"] == "second_look"
    assert steps(decision) == ["first", "fallback", "rescore", "retry", "second_look"]


def test_the_second_look_in_the_full_window_is_stricter():
    table = {
        "first": [("Burn on the kitten.", -0.6)],
        "retry": [("Turn on the kitchen lice.", -0.7)],
    }
    scores = {"burn on the kitten": -0.6, "turn on the kitchen lights": -1.5}  # 0.9 below
    near = {
        "burn on the kitten": ["burn on the kitchen"],  # near the home, no command
        "turn on the kitchen lice": ["turn on the kitchen lights"],
    }
    fitted, _ = listen(TableDecoder(table, scores), home(near=near))
    assert fitted.text == "turn on the kitchen lights"  # within the first look's 2.0
    decoder = TableDecoder(table, scores)
    full, decision = listen(decoder, home(near=near), rescore_full=True)
    assert full.text == "Burn on the kitten."  # not within 0.8
    assert full.data["rescored"]["window_s"] == 30 and steps(decision)[-1] == "second_look"


# -- the profile -------------------------------------------------------------------------------


def test_the_free_profile_asks_the_home_nothing_and_keeps_whispers_reading():
    table = {"first": [(KITTEN, -0.30), (KITCHEN, -0.35)], "retry": [(KITCHEN, -0.2)]}
    scores = {"turn on the kitchen lights": -0.4}
    house = home()
    decoder = TableDecoder(table, scores)
    transcript, decision = listen(decoder, house, profile="free")
    assert transcript.text == KITTEN
    assert decision["profile"] == "free"
    assert steps(decision) == ["first", "fallback"]
    assert house.asked == []  # not even "is this a command"
    assert decoder.calls == ["encode 5", "generate first x1"]  # greedy: no N-best to choose
    at_home, decision = listen(TableDecoder(table, scores), home())
    assert at_home.text == KITCHEN and decision["profile"] == "home"


# -- the anytime budget ------------------------------------------------------------------------


def test_once_the_budget_is_spent_no_step_runs_and_the_first_reading_is_kept():
    scores = {"turn on the kitten lights": -0.5, "turn on the kitchen lights": -0.9}
    decoder = TableDecoder({"first": [(KITTEN, -0.5)]}, scores, delays={"generate": 0.3})
    transcript, decision = listen(decoder, home(), budget_s=0.1)
    assert transcript.text == KITTEN  # the best so far
    assert decision["budget_s"] == 0.1
    assert decision["skipped"] == ["fallback", "rescore", "retry", "second_look"]
    assert steps(decision) == ["first"]
    assert not decoder.asked("score") and not decoder.asked("generate retry")


def test_a_step_begun_within_the_budget_finishes_and_the_later_ones_are_skipped():
    decoder = TableDecoder(
        {"first": [(CHATTER, -0.4)], "retry": [(KITCHEN, -0.3)]},
        {"i left the kitchen lights on all night": -0.4},
        delays={"forced_scores": 0.3},
    )
    transcript, decision = listen(decoder, home(), budget_s=0.25)
    assert steps(decision) == ["first", "fallback", "rescore"]
    assert decision["skipped"] == ["retry", "second_look"]
    assert transcript.text == CHATTER


def test_a_budget_not_spent_skips_nothing():
    scores = {"turn on the kitten lights": -0.5, "turn on the kitchen lights": -0.9}
    decoder = TableDecoder({"first": [(KITTEN, -0.5)]}, scores)
    transcript, decision = listen(decoder, home(), budget_s=60.0)
    assert transcript.text == "turn on the kitchen lights"
    assert "skipped" not in decision and decision["budget_s"] == 60.0


def test_once_the_budget_is_spent_the_search_grows_no_reading_and_says_it_was_cut():
    asked = []

    def steps(prompt, prefixes):
        asked.append(len(prefixes))
        return [np.log(np.full(4, 0.25)) for _ in prefixes]

    options = RecognitionOptions(recognition={"budget_s": 0.5})
    spent = Utterance(None, None, SPEECH, "en", options, FULL, started=time.perf_counter() - 1)
    cut: list[bool] = []
    search = until_spent(spent, steps, cut)
    assert np.isfinite(search([1], [()])[0]).all()  # the first step is always asked
    rows = search([1], [(1,), (2,)])
    assert len(rows) == 2 and all(np.isneginf(row).all() for row in rows)
    assert asked == [1] and cut == [True]
    fresh = Utterance(None, None, SPEECH, "en", options, FULL)
    cut = []
    search = until_spent(fresh, steps, cut)
    search([1], [()])
    search([1], [(1,)])
    assert asked == [1, 1, 1] and cut == []


def test_the_search_keeps_more_readings_in_a_language_written_in_characters():
    # Mandarin's grammar says each sentence in both scripts: its beam holds pairs
    def beam(language, **recognition):
        options = RecognitionOptions(recognition=recognition)
        return beam_of(Utterance(None, None, SPEECH, language, options, FULL))

    assert (beam("en"), beam("de"), beam("zh"), beam("zh-CN")) == (24, 24, 32, 32)
    assert (beam("zh", search_beam=12), beam("en", search_beam=12)) == (12, 12)
