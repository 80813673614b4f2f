"""Which home-assistant-intents languages the hassil stage loads, and text made ready for one.

The stage loads the config's ``language`` and every site's (``[sites.<id>] language``), one
grammar each, and a run is matched against its site's. Whisper writes Chinese in traditional
characters as often as in simplified ones, so text for a simplified grammar (zh-CN) is
converted first, and the other way round for zh-TW/zh-HK (OpenCC, ``voiced[languages]``).
"""

from __future__ import annotations

import functools
import logging
import re
from pathlib import Path
from typing import Any

import yaml

from voiced.api.languages import intents_language, primary

log = logging.getLogger(__name__)

_SIMPLIFIED = ("zh-CN",)
_TRADITIONAL = ("zh-TW", "zh-HK")
_FULL_STOPS = re.compile(r"[\s。！？，、；：…]+$")


def available() -> list[str]:
    import home_assistant_intents

    return list(home_assistant_intents.get_languages())


def intents_tag(language: str) -> str:
    """home-assistant-intents' name for a language (``zh`` -> ``zh-CN``); ValueError naming
    the languages it has when it has none."""
    found = intents_language(language, available())
    if found is None:
        raise ValueError(
            f"home-assistant-intents has no sentences for language {language!r}; set "
            f"language (or [sites.<id>] language) to one of: {', '.join(available())}"
        )
    return found


def intents_tag_or_none(language: str) -> str | None:
    try:
        return intents_language(language, available())
    except ValueError:  # not a language tag
        return None


def configured(option: str | None, app: Any) -> list[str]:
    """The languages to load: the stage's own ``language`` option when set (that one only),
    else the config's language and every site's, in home-assistant-intents' spelling."""
    if option:
        return [intents_tag(option)]
    settings = getattr(app, "settings", None)
    languages = settings.languages() if callable(getattr(settings, "languages", None)) else []
    return list(dict.fromkeys(intents_tag(lang) for lang in languages or ["en"]))


def sentence_file_language(path: Path) -> str | None:
    """The ``language:`` a custom sentence file declares (None: it declares none)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None  # the loader reports the file's problem
    value = data.get("language") if isinstance(data, dict) else None
    return str(value) if value else None


def file_is_for(path: Path, language: str, first: bool) -> bool:
    """Whether a custom sentence file belongs to this grammar: its declared language, or, when
    it declares none, the first (the config's own) language."""
    declared = sentence_file_language(path)
    if declared is None:
        return first
    return intents_language(declared, [language]) == language


@functools.lru_cache(maxsize=2)
def _converter(config: str) -> Any:
    try:
        from opencc_purepy import OpenCC
    except ImportError:
        log.warning(
            "hassil: opencc-purepy is missing, so Chinese in the other script will not match "
            "(pip install 'voiced[languages]')"
        )
        return None
    return OpenCC(config)


def prepare(text: str, language: str) -> str:
    """Text made ready for the grammar of ``language``: Chinese in that grammar's script,
    without the full stop Whisper ends it with."""
    if primary(language) != "zh":
        return text
    converter = _script(language, into_grammar=True)
    if converter is not None:
        text = converter.convert(text)
    return _FULL_STOPS.sub("", text)


def other_script(text: str, language: str) -> str:
    """``text`` of the grammar of ``language`` as Whisper may write it in the other Chinese
    script ("厨房" -> "廚房" for zh-CN); ``text`` itself in other languages or without OpenCC."""
    converter = _script(language, into_grammar=False)
    return text if converter is None else converter.convert(text)


def _script(language: str, into_grammar: bool) -> Any:
    """OpenCC converting Chinese into the script of ``language``'s grammar (or out of it);
    None for a language without one, or without OpenCC."""
    if language not in _SIMPLIFIED and language not in _TRADITIONAL:
        return None
    simplified = language in _SIMPLIFIED
    return _converter("t2s" if simplified == into_grammar else "s2t")
