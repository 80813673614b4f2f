"""A transcript made ready for one language's templates: its numbers, units and filler words.

Home Assistant's sentences spell a language one way; people and Whisper spell it another:

* Chinese: numbers in Chinese numerals ("十分钟", "三十秒") or digits run on into their unit
  ("5分钟"), where the timer templates want digits and a space ("5 分钟"). Numerals before a
  unit become digits (cn2an, ``voiced[languages]``), and a digit run gets a space after it
  before a time unit (not before 度 or %, which the templates glue on).
* German: a duration glued to its noun ("5-Minuten-Timer") comes apart ("5 Minuten Timer").
* Every language: a number Whisper writes with its thousands grouped ("3,900 Kelvin",
  German "3.900 Kelvin") is one number ("3900"), as the templates' ranges read it.
* Every language: politeness and filler words ("请", "帮我…一下", "bitte", "mal") are hassil
  skip words: dropped when a template does not say them, kept when one does ("说一下").
"""

from __future__ import annotations

import re

from voiced.api.languages import CHINESE_NUMERALS, chinese_number, primary

SKIP_WORDS: dict[str, tuple[str, ...]] = {
    "zh": (
        "请问", "请你", "请", "帮我", "帮忙", "给我", "麻烦你", "麻烦", "你好", "一下", "好吗",
        "可以吗", "好不好", "行吗", "谢谢你", "谢谢", "吧", "啊", "呀", "呢", "哦", "嗯", "喔",
    ),
    "de": (
        "bitte", "mal", "doch", "eben", "ähm", "äh", "öhm", "hm", "hmm", "hallo", "hey", "okay",
        "ok", "also", "danke", "kannst du", "könntest du", "würdest du", "kannst du bitte",
    ),
}  # fmt: skip
"""Politeness and filler words per language (its primary subtag): hassil skip words, beside
the language's own from home-assistant-intents (zh-CN has only 请问, 谢谢, 麻烦, 麻烦你)."""

_NUMERAL = CHINESE_NUMERALS
_UNIT_AFTER = r"(?=分钟|分(?:$|[的后计倒定])|秒|小时|个小时|个钟头|钟头|度|摄氏度|%|％)"
_NUMERALS_BEFORE_UNIT = re.compile(rf"[{_NUMERAL}]+{_UNIT_AFTER}")
_NUMERALS_AFTER_PERCENT = re.compile(rf"(?<=百分之)[{_NUMERAL}]+")
_NUMERALS_AT_END = re.compile(rf"(?<=[到为成至])[{_NUMERAL}]+$")
_DIGITS_BEFORE_TIME_UNIT = re.compile(r"(\d+)\s*(?=分钟|分|秒|小时|个|钟头)")
_CJK_BEFORE_DIGITS = re.compile(r"(?<=[\u3400-\u9fff])(?=\d)")
_INNER_PUNCTUATION = re.compile(r"[，、；：,;:。！？!?]+")
DECIMAL_COMMA = frozenset(("de", "fr", "es", "it", "nl", "pt", "ru", "pl", "sv", "da", "nb", "fi"))
"""Languages that write a decimal comma and group thousands with a point ("3.900,5")."""
_GROUPED = {
    separator: re.compile(rf"(?<![\d.,])\d{{1,3}}(?:{re.escape(separator)}\d{{3}})+(?![.,]?\d)")
    for separator in ",."
}
_GLUED_DURATION = re.compile(
    r"\b(\d+|\w+?)-(Sekunden|Minuten|Stunden)-(Timer|Wecker)\b", re.IGNORECASE
)


def skip_words(language: str) -> tuple[str, ...]:
    """The filler and politeness words hassil may skip in ``language``."""
    return SKIP_WORDS.get(primary(language), ())


def reworded(text: str, language: str) -> str:
    """``text`` with its numbers and units spelled as ``language``'s templates spell them."""
    tag = primary(language)
    text = ungrouped(text, tag)
    if tag == "zh":
        return _chinese(text)
    if tag == "de":
        return _GLUED_DURATION.sub(r"\1 \2 \3", text)
    return text


def ungrouped(text: str, language: str) -> str:
    """``text`` with each number whose thousands are grouped as ``language`` groups them
    ("3,900"; German "3.900") written as one digit run ("3900"); a decimal ("21,5") kept."""
    separator = "." if primary(language) in DECIMAL_COMMA else ","
    return _GROUPED[separator].sub(lambda m: m[0].replace(separator, ""), text)


def _digits(numerals: str) -> str:
    """Chinese numerals as digits ("三十" -> "30"); unchanged when they are no number."""
    value = chinese_number(numerals)
    return numerals if value is None else str(value)


def _chinese(text: str) -> str:
    """Numerals before a unit (or after 百分之, or ending "调到…") as digits, a space after a
    digit run before a time unit and before it after a character, no inner punctuation."""
    text = _INNER_PUNCTUATION.sub("", text)
    for pattern in (_NUMERALS_BEFORE_UNIT, _NUMERALS_AFTER_PERCENT, _NUMERALS_AT_END):
        text = pattern.sub(lambda m: _digits(m[0]), text)
    text = _CJK_BEFORE_DIGITS.sub(" ", text)
    return _DIGITS_BEFORE_TIME_UNIT.sub(r"\1 ", text)
