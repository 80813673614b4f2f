"""The rules that turn a Whisper decode into a transcript: window size, loops, no-speech."""

from __future__ import annotations

from voiced_plugins.asr_whisper.common import WhisperOptions, judge, max_new_tokens, window_seconds
from voiced_plugins.asr_whisper.segments import (
    drop_repeats,
    first_sentences,
    repeats,
    split_segments,
    spoken_text,
)

TB = 1000  # first timestamp token in these examples; one step is 0.02 s
WORDS = {1: " Turn", 2: " on", 3: " the", 4: " lights."}


def decode(ids: list[int]) -> str:
    return "".join(WORDS[i] for i in ids)


def ts(seconds: float) -> int:
    return TB + round(seconds / 0.02)


def test_the_window_fits_the_utterance_within_whispers_30_seconds():
    fit = WhisperOptions()
    assert window_seconds(1.7, fit) == 5  # never below fit_min_s
    assert window_seconds(6.2, fit) == 8  # length + 1 s padding, whole seconds
    assert window_seconds(29.5, fit) == 30
    assert window_seconds(45.0, fit) == 30
    assert window_seconds(1.7, WhisperOptions(window="full")) == 30


def test_the_decode_budget_grows_with_the_audio_and_stops_at_the_model_limit():
    assert max_new_tokens(2.0, 444) < max_new_tokens(10.0, 444) <= 444
    assert max_new_tokens(60.0, 444) == 444


def test_timestamp_pairs_split_the_decode_into_segments():
    tokens = [ts(0), 1, 2, ts(1.0), ts(1.0), 3, 4, ts(1.8)]
    assert split_segments(tokens, TB) == [(0.0, [1, 2]), (1.0, [3, 4])]


def test_segments_that_start_where_the_audio_ends_were_never_spoken():
    tokens = [ts(0), 1, 2, 3, 4, ts(1.6), ts(1.9), 1, 2, ts(2.0)]
    assert spoken_text(tokens, TB, 2.0, decode) == ("Turn on the lights.", 1)


def test_a_segment_that_repeats_the_one_before_is_dropped():
    tokens = [ts(0), 1, 2, 3, 4, ts(1.0), ts(1.0), 1, 2, 3, ts(1.5)]
    assert spoken_text(tokens, TB, 4.0, decode) == ("Turn on the lights.", 1)


def test_a_phrase_looping_inside_one_segment_is_cut_to_one_copy():
    tokens = [ts(0), 1, 2, 3, 4, 1, 2, 3, 4, 1, 2]
    assert spoken_text(tokens, TB, 4.0, decode) == ("Turn on the lights.", 1)
    assert drop_repeats("stop stop") == ("stop stop", False)
    assert drop_repeats("I said yes, I said") == ("I said yes, I said", False)


def test_noise_read_as_a_word_is_no_speech():
    options = WhisperOptions()
    assert judge("You", -1.67, 0.88, options).no_speech  # OpenAI's rule
    assert judge("you", -0.97, 0.91, options).no_speech  # confident, but surely not speech
    assert judge(" . ", -0.2, 0.1, options).no_speech  # no words at all
    assert not judge("Turn on the lights.", -0.7, 0.41, options).no_speech


def test_a_looping_decode_is_no_speech():
    loop = "Thank you. " * 20
    verdict = judge(loop, -0.1, 0.05, WhisperOptions())
    assert verdict.no_speech and "compression" in verdict.reason
    assert not judge(loop, -0.1, 0.05, WhisperOptions(compression_ratio_threshold=None)).no_speech


def test_a_sentence_said_again_with_another_word_ending_is_a_loop():
    # tiny.en on "turn on the coffee maker" (issue 15): the loop guard used to reject it all
    looped = "Turning on the coffee maker. Turn on the coffee maker. Turn on the coffee"
    assert first_sentences(looped) == ("Turning on the coffee maker.", True)


def test_a_sentence_that_comes_back_after_another_is_cut_a_b_a():
    text = "Turn on the kitchen light. Set a timer. Turn on the kitchen light."
    assert first_sentences(text) == ("Turn on the kitchen light. Set a timer.", True)
    assert repeats("Turn on the kitchen", ["Turn on the kitchen light."])


def test_two_different_commands_are_not_a_loop():
    two = "Turn on the kitchen light. Turn on the porch light."
    assert first_sentences(two) == (two, False)
    assert first_sentences("Turn on the light. Turn off the light.")[1] is False
