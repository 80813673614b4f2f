"""The home-constrained search and its grounding for a language written without spaces
(Mandarin), on Whisper base's real tokenizer and the zh-CN grammar of a household on two
floors; the decoder is a table of next-token log-probabilities (the design's fake Decoder)."""

from __future__ import annotations

from pathlib import Path

import pytest
from table_decoder import bundled_tokenizer, saying
from voiced_plugins.asr_whisper.constrained import (
    START,
    GrammarCache,
    TokenGrammar,
    constrained_decode,
    groundable,
    grounded_by_sound,
)
from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

HOME = Path(__file__).parent / "homes" / "jia_zh.yaml"


@pytest.fixture(scope="module")
def stage() -> HassilIntent:
    stage = HassilIntent(HassilOptions(home=str(HOME), sentences=[], language="zh-CN"))
    stage.load()
    return stage


@pytest.fixture(scope="module")
def tokenizer():
    return bundled_tokenizer("base", "zh")


@pytest.fixture(scope="module")
def grammar(stage, tokenizer) -> TokenGrammar:
    """The grammar's own script only, no openings."""
    graph = stage.command_graph()
    return TokenGrammar(
        graph.following, graph.numbers.words, tokenizer, graph.templates, graph.spaced
    )


@pytest.fixture(scope="module")
def both_scripts(stage, tokenizer) -> TokenGrammar:
    """The grammar as the engine builds it: the words in the other script too."""
    return GrammarCache().get(stage, tokenizer)


def test_a_mandarin_home_has_a_word_graph_of_its_template_words(stage):
    graph = stage.command_graph()
    assert graph is not None and not graph.spaced
    assert graph.allows("打开", "厨房") and graph.allows("厨房", "的") and graph.allows("的", "灯")
    assert not graph.allows("打开", "打开")


def test_a_chinese_word_is_spelled_with_no_space_before_it(grammar, tokenizer):
    assert {tokenizer.decode(t) for t in grammar.spellings("厨房")} == {"厨房"}
    numbers = {tokenizer.decode(t) for t in grammar.spellings("<#>")}
    assert {"5", " 5", "十"} <= numbers
    assert tokenizer.encode("打开")[0] in grammar.after(START).children
    assert tokenizer.encode("。")[0] in grammar.end_tokens


def table_decoder(tokenizer, said: str):
    """Next-token log-probabilities that say ``said`` (its words' tokens as the grammar
    spells them) and give every other token -8."""
    wanted = [t for word in said.split() for t in tokenizer.encode(word)] + [tokenizer.eot]
    return saying(wanted, tokenizer.tokenizer.get_vocab_size())


@pytest.mark.parametrize("said", ["关闭 卧室 的 灯", "打开 咖啡机", "现在 几点 了"])
def test_the_search_finds_a_home_sentence_token_by_token(grammar, tokenizer, stage, said):
    found = constrained_decode(table_decoder(tokenizer, said), tokenizer, grammar, beam=8)
    assert found and found[0].text == said.replace(" ", "")
    assert stage.command_meaning(found[0].text) is not None


def test_a_found_sentence_is_grounded_in_what_was_heard_by_its_sound(stage):
    heard = [stage.sounds_of("先載起殿兒")]  # base's hearing of 现在几点了, traditional
    assert grounded_by_sound(stage.sounds_of("现在几点了"), heard)
    assert not grounded_by_sound(stage.sounds_of("暂停"), [stage.sounds_of("完帝卧室的台灯")])


def test_a_sentence_of_one_syllable_is_never_taken_without_grounding(stage):
    """A reading grounds a Chinese sentence by two syllables in common: one that has fewer
    ("嗨", which the search found for 打开台灯 heard as "拆拆") could never be grounded."""
    assert not groundable("嗨", spaced=False, sounds=stage.sounds_of)
    assert groundable("打开风扇", spaced=False, sounds=stage.sounds_of)


def test_mandarin_candidates_are_home_commands_that_sound_like_the_reading(stage):
    found = stage.command_candidates(["打開握式的燈", "現在起點鐘"])
    assert "打开卧室的灯" in found or "打开卧室的台灯" in found
    assert "现在几点钟" in found
    assert stage.command_candidates(["我昨天去超市买了很多水果"]) == []


def test_a_simplified_grammar_is_also_written_in_traditional_characters(stage):
    assert stage.written_forms("厨房") == ("廚房",)
    assert stage.written_forms("打开") == ("打開",)
    assert stage.written_forms("的") == ()  # the same in both scripts


@pytest.mark.parametrize(
    "said", ["打開 廚房 的 燈", "把 臥室 的 燈 關掉", "設置 十 分鐘 的 計時器"]
)
def test_the_search_follows_whisper_writing_traditional_characters(
    grammar, both_scripts, tokenizer, stage, said
):
    """Whisper base writes espeak-ng's Mandarin in traditional characters as often as not;
    a search spelling only the grammar's simplified ones loses every reading on the way."""
    simplified_only = constrained_decode(table_decoder(tokenizer, said), tokenizer, grammar, beam=8)
    assert all(c.avg_logprob < -3.0 for c in simplified_only)  # nothing the audio says
    found = constrained_decode(table_decoder(tokenizer, said), tokenizer, both_scripts, beam=8)
    assert found and found[0].text == said.replace(" ", "")
    assert stage.command_meaning(found[0].text) is not None


def test_a_sentence_may_open_with_a_mandarin_skip_word(both_scripts, tokenizer, stage):
    found = constrained_decode(
        table_decoder(tokenizer, "请 打开 厨房 的 灯"), tokenizer, both_scripts, openings=True
    )
    assert found and found[0].text == "请打开厨房的灯"
    assert (found[0].opening, found[0].sentence) == ("请", "打开厨房的灯")
