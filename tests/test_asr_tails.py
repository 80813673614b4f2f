"""A command whose first word the decoder misheard is found by its tail: the decoder held to
the reading's first word, the search finds the rest among the home's words, and the home's
first words are put before it. On tiny.en's real tokenizer and config/home.yaml's grammar;
the decoder is a table of next-token log-probabilities (the design's fake Decoder)."""

from __future__ import annotations

import pytest
from table_decoder import saying_text as saying
from voiced_plugins.asr_whisper.constrained import constrained_decode
from voiced_plugins.asr_whisper.rescore import NO_COMMAND, NOTHING_NEAR, no_command_near
from voiced_plugins.asr_whisper.tails import CHECKS, completed, tail_commands


def with_first(steps, en_tokenizer, word: str, logprob: float):
    """``steps`` whose first token also fits ``word`` (at ``logprob``): a misheard first
    word still sounds a little like the said one."""
    token = en_tokenizer.encode(" " + word)[0]

    def first(prompt, prefixes):
        rows = steps(prompt, prefixes)
        for prefix, row in zip(prefixes, rows, strict=True):
            if not prefix:
                row[token] = max(row[token], logprob)
        return rows

    return first


def test_the_search_from_a_misheard_first_word_finds_the_rest_of_the_sentence(
    en_tokenizer, home_grammar
):
    said = saying(en_tokenizer, "Pern on the kitchen light")
    from_start = constrained_decode(said, en_tokenizer, home_grammar)
    assert all("kitchen" not in c.text for c in from_start)  # "Pern" is no word of the home
    held = tuple(en_tokenizer.encode(" Pern"))
    found = constrained_decode(said, en_tokenizer, home_grammar, after=held)
    assert found[0].sentence == "on the kitchen light"
    assert found[0].opening == "Pern"
    assert found[0].avg_logprob == pytest.approx(-0.1, abs=0.01)  # its own tokens only


def test_a_misheard_first_word_is_put_right_with_the_homes_first_words(
    hassil, en_tokenizer, home_grammar
):
    said = with_first(saying(en_tokenizer, "Pern on the kitchen light"), en_tokenizer, "turn", -3.0)
    heard = [("Pern on the kitchen light.", -0.4)]
    found = tail_commands(said, en_tokenizer, home_grammar, heard, hassil, 24)
    assert found is not None
    assert found.commands[0] == "turn on the kitchen light"  # the likeliest first word
    assert "turn on the kitchen light" not in found.ungrounded  # "kitchen" was heard
    assert all(hassil.command_meaning(text) for text in found.commands)


def test_a_tail_no_reading_grounds_is_offered_marked(hassil, en_tokenizer, home_grammar):
    said = with_first(saying(en_tokenizer, "Pern on the kitchen light"), en_tokenizer, "turn", -3.0)
    found = tail_commands(
        said, en_tokenizer, home_grammar, [("Pern on a big night.", -0.4)], hassil, 24
    )
    assert found is not None and "turn on the kitchen light" in found.ungrounded


def test_a_reading_of_one_word_has_no_tail(hassil, en_tokenizer, home_grammar):
    said = saying(en_tokenizer, "Pern")
    assert tail_commands(said, en_tokenizer, home_grammar, [("Pern.", -0.4)], hassil, 24) is None
    assert tail_commands(said, en_tokenizer, home_grammar, [], hassil, 24) is None


def test_one_or_two_first_words_are_put_before_a_tail_likeliest_first(hassil, home_grammar):
    def is_command(text: str) -> bool:
        return hassil.command_meaning(text) is not None

    likely = {"what": -1.0, "whats": -2.0}
    made = completed(home_grammar, "the date today", lambda w: likely.get(w, -9.0), is_command)
    assert made[0] == "what is the date today"  # two words: "what is"
    likely = {"switch": -1.0, "turn": -2.0}
    made = completed(
        home_grammar, "on the kitchen light", lambda w: likely.get(w, -9.0), is_command
    )
    assert made[:2] == ["switch on the kitchen light", "turn on the kitchen light"]
    assert len(made) <= 4
    assert completed(home_grammar, "banana bread", lambda w: 0.0, is_command) == []


def test_at_most_checks_sentences_of_one_tail_are_asked_their_meaning(home_grammar):
    asked: list[str] = []

    def no_command(text: str) -> bool:
        asked.append(text)
        return False

    assert completed(home_grammar, "on the kitchen light", lambda w: 0.0, no_command) == []
    assert len(asked) == CHECKS  # each a strict match: the likeliest CHECKS, not thousands


@pytest.mark.parametrize(
    ("reason", "runs"),
    [
        (NOTHING_NEAR, True),
        (NO_COMMAND.format(32), True),
        ("'turn off all the lights' and 'turn on all the lights' score alike and mean "
         "different things", False),  # the audio cannot tell them apart: no third guess
        ("'is the waffle iron on' scores 1.12 below what was heard (most 0.8)", False),
    ],
)  # fmt: skip
def test_the_tail_search_runs_only_where_no_command_was_near(reason, runs):
    assert no_command_near(reason) is runs
