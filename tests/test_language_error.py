"""Error rates per language in the benchmarks: WER on words, CER on Chinese characters."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# benchmarks/ is a folder of scripts in the checkout, not an installed package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.language_error import error_rate, units


def test_chinese_is_counted_in_characters_in_the_references_script():
    assert units("打開廚房的燈。", "zh-CN") == list("打开厨房的灯")
    result = error_rate(["打开厨房的灯。"], ["打開租房的燈"], "zh-CN")
    assert (result.name, result.errors, result.units) == ("CER", 1, 6)


def test_german_is_counted_in_words_without_case_or_punctuation():
    assert units("Schalte das Licht, in der Küche ein!", "de") == [
        "schalte", "das", "licht", "in", "der", "küche", "ein",
    ]  # fmt: skip
    result = error_rate(
        ["Schalte das Licht in der Küche ein."], ["Schalte passlicht in der Küche ein."], "de"
    )
    assert (result.name, result.errors, result.units) == ("WER", 2, 7)
    assert result.rate == pytest.approx(2 / 7)


def test_english_keeps_its_number_words():
    assert (
        error_rate(["set a timer for five minutes"], ["Set a timer for 5 minutes."], "en").errors
        == 0
    )


def test_nothing_heard_is_every_unit_wrong_and_empty_references_are_refused():
    assert error_rate(["今天几号"], [""], "zh").rate == 1.0
    with pytest.raises(ValueError, match="empty"):
        error_rate([""], ["x"], "de")
