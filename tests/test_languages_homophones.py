"""Mandarin written with the wrong characters still matches, by its sound (pinyin), on the real
home-assistant-intents zh-CN grammar: only as a strict template match, only on something the
home has, never for chatter. The heard texts are what Whisper base wrote for espeak-ng's speech
(``python -m benchmarks.languages``, tests/test_languages_e2e.py)."""

from __future__ import annotations

import pytest
from home_stages import MULTILINGUAL_HOME, home_hassil
from voiced_plugins.intent_hassil.homophones import SoundIndex, folded, sounds

pytest.importorskip("pypinyin", reason="needs voiced[languages]")


@pytest.fixture(scope="module")
def mandarin():
    stage = home_hassil(MULTILINGUAL_HOME, language="zh-CN")
    yield stage
    stage.close()


def test_syllables_fold_what_whisper_and_input_methods_confuse():
    assert sounds("卧室") == sounds("握式") == ["wo", "si"]  # shì, shì: one sound
    assert folded("qi") == folded("ji") and folded("feng") == folded("fen")
    assert folded("zhong") == folded("zong") and folded("xian") != folded("shan")


def test_a_reading_puts_a_word_only_where_as_many_syllables_sound_like_it():
    index = SoundIndex.of(["卧室", "打开", "灯"])
    readings = list(index.readings("打开握式的灯"))
    assert readings[0] == "打开卧室的灯"
    assert all(len(r) == len("打开握式的灯") for r in readings)


@pytest.mark.parametrize(
    ("heard", "intent", "entities"),
    [("打開握式的燈", "HassTurnOn", ["light.bedroom"]),       # 卧室 written 握式
     ("打開我時的風扇", "HassTurnOn", ["fan.bedroom"]),        # 卧室 written 我時
     ("現在起點鐘", "HassGetCurrentTime", []),                # 几 heard as 起 (q/j)
     ("先 再 起 點 中", "HassGetCurrentTime", [])],            # spaced, 现在 as 先再
)  # fmt: skip
def test_mandarin_heard_with_homophones_is_the_command_it_sounds_like(
    mandarin, heard, intent, entities
):
    found = mandarin.recognize(heard)
    assert found is not None and found.name == intent
    assert found.data["entities"] == entities
    assert found.data["homophones"]["heard"] != found.data["homophones"]["text"]
    assert found.confidence < 1.0 and found.text == heard


def test_a_command_on_something_the_home_lacks_is_not_made_up(mandarin):
    assert mandarin.recognize("打開車褲的燈") is None  # 车库 (garage): this home has none


@pytest.mark.parametrize(
    "chatter",
    ["今天天氣真好", "天天天天氣真豪", "我想吃饭了", "明天会下雨吗", "靜靜靜 起真豹",
     "先發起点了", "期天", "玩氣 我是個顫", "先塞啟点刀"],
)  # fmt: skip
def test_chatter_and_garbage_match_nothing_by_sound(mandarin, chatter):
    assert mandarin.recognize(chatter) is None


def test_other_languages_are_not_read_as_pinyin():
    stage = home_hassil(MULTILINGUAL_HOME, language="de")
    assert stage.sounds is None
