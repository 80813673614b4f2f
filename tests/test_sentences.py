"""Splitting an answer into sentences for streamed speech synthesis."""

from __future__ import annotations

import pytest

from voiced.sentences import iter_sentences, lead_clause, split_sentences


def test_splits_at_sentence_ends() -> None:
    assert split_sentences("The lights are on. Anything else? Have a nice day!") == [
        "The lights are on.",
        "Anything else?",
        "Have a nice day!",
    ]


def test_empty_and_whitespace_text_give_no_sentences() -> None:
    assert split_sentences("") == []
    assert split_sentences(" \n\t  ") == []


def test_pieces_with_nothing_to_say_are_dropped() -> None:
    assert split_sentences("... !! OK. …") == ["OK."]


def test_titles_and_latin_abbreviations_do_not_end_a_sentence() -> None:
    assert split_sentences("Mr. Smith called Dr. Jones, e.g. about the heating. It is fixed.") == [
        "Mr. Smith called Dr. Jones, e.g. about the heating.",
        "It is fixed.",
    ]


def test_no_before_a_number_is_an_abbreviation_but_ends_a_sentence_otherwise() -> None:
    assert split_sentences("Play track No. 5 please. The answer is no. Sorry.") == [
        "Play track No. 5 please.",
        "The answer is no.",
        "Sorry.",
    ]


def test_numbers_and_times_stay_whole() -> None:
    assert split_sentences("It is 21.5 degrees. The alarm is set for 10:30 tomorrow.") == [
        "It is 21.5 degrees.",
        "The alarm is set for 10:30 tomorrow.",
    ]


def test_am_pm_and_etc_end_a_sentence_only_before_a_capital() -> None:
    assert split_sentences("I'll wake you at 7 a.m. tomorrow. Sleep well.") == [
        "I'll wake you at 7 a.m. tomorrow.",
        "Sleep well.",
    ]
    assert split_sentences("Buy milk, eggs, etc. Then come home.") == [
        "Buy milk, eggs, etc.",
        "Then come home.",
    ]


def test_closing_quotes_and_brackets_stay_with_their_sentence() -> None:
    assert split_sentences('She said "Good night." Then the lights went out.') == [
        'She said "Good night."',
        "Then the lights went out.",
    ]


def test_ellipsis_and_combined_marks_end_sentences() -> None:
    assert split_sentences("Well… maybe. Really?! Yes... I think so.") == [
        "Well…",
        "maybe.",
        "Really?!",
        "Yes...",
        "I think so.",
    ]


def test_blank_lines_end_a_paragraph_even_without_punctuation() -> None:
    assert split_sentences("Shopping list\n\nmilk and eggs") == ["Shopping list", "milk and eggs"]


def test_single_newlines_inside_a_short_sentence_become_spaces() -> None:
    assert split_sentences("Turn on\nthe lights.") == ["Turn on the lights."]


def test_long_sentence_is_cut_at_semicolons_and_colons_before_commas() -> None:
    text = "First the kitchen lights, then the hall; after that the garage: done, finally."
    assert split_sentences(text, max_chars=40) == [
        "First the kitchen lights, then the hall;",
        "after that the garage: done, finally.",
    ]


def test_long_sentence_is_cut_at_commas_then_spaces() -> None:
    text = "one two three four, five six seven eight, nine ten eleven twelve thirteen fourteen"
    pieces = split_sentences(text, max_chars=21)
    assert pieces == [
        "one two three four,",
        "five six seven eight,",
        "nine ten eleven",
        "twelve thirteen",
        "fourteen",
    ]


def test_a_word_longer_than_the_limit_is_cut_hard() -> None:
    assert [len(p) for p in split_sentences("x" * 130, max_chars=50)] == [50, 50, 30]


def test_very_long_text_is_split_into_bounded_pieces_and_loses_no_words() -> None:
    paragraph = (
        "The weather today is mild with a light breeze from the west, and in the evening, "
        "around 6 p.m. or so, some rain may come; take an umbrella if you go out "
    )
    text = paragraph * 400  # ~60 000 characters with no sentence end at all
    pieces = split_sentences(text, max_chars=120)
    assert max(len(p) for p in pieces) <= 120
    assert " ".join(pieces).split() == text.split()


def test_iter_sentences_yields_the_first_sentence_lazily() -> None:
    sentences = iter_sentences("First one. " + "More text here. " * 10_000)
    assert next(sentences) == "First one."


def test_a_tiny_limit_is_rejected_with_the_minimum() -> None:
    with pytest.raises(ValueError, match="max_chars must be at least 10"):
        split_sentences("Hello.", max_chars=3)


def test_chinese_sentences_end_at_full_width_marks_without_spaces() -> None:
    text = "打开厨房的灯。现在几点？太好了！"
    assert split_sentences(text) == ["打开厨房的灯。", "现在几点？", "太好了！"]


def test_a_long_chinese_sentence_is_cut_at_its_commas_with_no_spaces_added() -> None:
    clause = "今天的天气很好，"
    text = clause * 10 + "我们去公园吧。"
    pieces = split_sentences(text, max_chars=30)
    assert all(len(p) <= 30 for p in pieces)
    assert all(p.endswith(("，", "。")) for p in pieces)  # cut at a comma, never mid-clause
    assert "".join(pieces) == text


def test_a_long_first_sentence_is_cut_after_its_first_clause() -> None:
    text = "The weather today is sunny, with a high of twenty degrees. Enjoy it."
    assert lead_clause(split_sentences(text)) == [
        "The weather today is sunny,",
        "with a high of twenty degrees.",
        "Enjoy it.",
    ]


def test_short_first_sentences_and_one_word_clauses_stay_whole() -> None:
    assert lead_clause(["Turned on the lights", "Done."]) == ["Turned on the lights", "Done."]
    long_yes = "Yes, the kitchen light and the counter lights are both on right now"
    assert lead_clause([long_yes]) == [long_yes]  # "Yes," alone is not worth a pause
    assert lead_clause([]) == []
