"""Language tags, and what each stage calls the same language.

One setting, ``language`` (and per site, ``[sites.<id>] language``), names the language in
the BCP 47 style Home Assistant uses (``en``, ``de``, ``zh-CN``, ``pt-BR``); every stage asks
here for its own spelling of it: Whisper wants ``zh``, home-assistant-intents ``zh-CN``,
eSpeak NG a voice that reads Chinese characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

TAG = re.compile(r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$")

_INTENTS_ALIASES = {
    "zh": "zh-CN", "zh-hans": "zh-CN", "zh-cn": "zh-CN", "zh-sg": "zh-CN", "cmn": "zh-CN",
    "zh-hans-cn": "zh-CN", "zh-hant": "zh-TW", "zh-tw": "zh-TW", "zh-hant-tw": "zh-TW",
    "zh-hk": "zh-HK", "zh-hant-hk": "zh-HK", "yue": "zh-HK", "nn": "nb", "no": "nb",
}  # fmt: skip
"""Tags home-assistant-intents spells otherwise (it has zh-CN/zh-HK/zh-TW, nb)."""

_WHISPER = {"cmn": "zh", "nb": "no", "nn": "nn", "fil": "tl", "yue": "zh"}
"""Whisper's language tokens where they are not the primary subtag."""

CER_LANGUAGES = frozenset(("zh", "cmn", "yue", "ja", "th", "lo", "my", "km", "bo"))
"""Written without spaces between words: error rates are counted in characters."""


class LanguageError(ValueError):
    """A language no stage can be given; the message names the known ones."""


def canonical(tag: str) -> str:
    """``zh_cn`` -> ``zh-CN``, ``DE`` -> ``de``, ``zh-hans`` -> ``zh-Hans`` (BCP 47 casing)."""
    if not TAG.match(tag.strip()):
        raise LanguageError(f"{tag!r} is not a language tag (such as en, de, zh-CN, pt-BR)")
    parts = tag.strip().replace("_", "-").split("-")
    out = [parts[0].lower()]
    for part in parts[1:]:
        if len(part) == 2:
            out.append(part.upper())
        elif len(part) == 4:
            out.append(part.title())
        else:
            out.append(part.lower())
    return "-".join(out)


def primary(tag: str) -> str:
    """The language without region or script: ``zh-CN`` -> ``zh``."""
    return canonical(tag).split("-", 1)[0]


def same_language(a: str, b: str) -> bool:
    """Whether two tags name one language (``en`` and ``en_US``; ``zh-CN`` and ``cmn``)."""
    return whisper_language(a) == whisper_language(b)


def whisper_language(tag: str) -> str:
    """Whisper's language token for a tag: ``zh-CN`` -> ``zh``, ``de-CH`` -> ``de``."""
    first = primary(tag)
    return _WHISPER.get(first, first)


def intents_language(tag: str, available: Iterable[str]) -> str | None:
    """The home-assistant-intents language for a tag (``zh`` -> ``zh-CN``), None if none."""
    known = {a.lower(): a for a in available}
    wanted = canonical(tag).lower()
    for candidate in (wanted, _INTENTS_ALIASES.get(wanted, ""), primary(tag)):
        found = known.get(candidate.lower()) or known.get(
            _INTENTS_ALIASES.get(candidate.lower(), "").lower()
        )
        if found:
            return found
    return None


def espeak_voice(tag: str) -> str:
    """The eSpeak NG voice that speaks a language. Mandarin is ``cmn-latn-pinyin``: espeak-ng
    1.51's ``cmn`` voice reads Chinese characters as English letters (Whisper hears digits);
    its pinyin twin reads them as Mandarin."""
    first = primary(tag)
    lowered = canonical(tag).lower()
    if first == "yue" or lowered in ("zh-hk", "zh-hant-hk"):
        return "yue"
    if first in ("zh", "cmn"):
        return "cmn-latn-pinyin"
    return lowered


def counts_characters(tag: str) -> bool:
    """Whether error rates in this language are character error rates (Chinese, Japanese)."""
    return primary(tag) in CER_LANGUAGES
