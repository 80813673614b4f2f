"""The ``info`` answer to ``describe``: what voiced offers over Wyoming right now."""

from __future__ import annotations

from typing import Any

from wyoming.info import (
    AsrModel,
    AsrProgram,
    Attribution,
    HandleModel,
    HandleProgram,
    Info,
    IntentModel,
    IntentProgram,
    TtsProgram,
    TtsVoice,
    WakeModel,
    WakeProgram,
)

import voiced

ATTRIBUTION = Attribution(name="voiced", url="https://github.com/voiced/voiced")
VERSION = getattr(voiced, "__version__", None)


def whisper_languages(engine: Any) -> list[str]:
    """Languages an ASR engine understands: every Whisper language when multilingual."""
    try:
        multilingual = bool(engine.multilingual)
    except Exception:  # not loaded, or not a Whisper engine
        multilingual = False
    if not multilingual:
        return [str(getattr(engine, "language", None) or "en")]
    try:
        from faster_whisper.tokenizer import _LANGUAGE_CODES

        return sorted(_LANGUAGE_CODES)
    except ImportError:
        return ["en"]


def asr_programs(app: Any) -> list[AsrProgram]:
    engines = app.engines("asr")
    if not engines:
        return []
    models = []
    for name, engine in engines:
        options = getattr(engine, "options", None)
        model = getattr(options, "model", None) or name
        models.append(
            AsrModel(
                name=name,
                attribution=ATTRIBUTION,
                installed=True,
                description=f"{name}: {model} on {getattr(engine, 'device', 'cpu')}",
                version=VERSION,
                languages=whisper_languages(engine),
            )
        )
    return [
        AsrProgram(
            name="voiced-asr",
            attribution=ATTRIBUTION,
            installed=True,
            description="voiced speech-to-text (engines in fallback order)",
            version=VERSION,
            models=models,
            supports_transcript_streaming=False,
        )
    ]


def tts_programs(app: Any) -> list[TtsProgram]:
    engines = app.engines("tts")
    if not engines:
        return []
    voices = []
    for name, engine in engines:
        info = dict(getattr(engine, "info", {}) or {})
        voice = str(info.get("voice") or name)
        language = str(info.get("language") or app.settings.language)
        voices.append(
            TtsVoice(
                name=voice,
                attribution=ATTRIBUTION,
                installed=True,
                description=f"{name}: {voice} on {getattr(engine, 'device', 'cpu')}",
                version=VERSION,
                languages=[language],
            )
        )
    return [
        TtsProgram(
            name="voiced-tts",
            attribution=ATTRIBUTION,
            installed=True,
            description="voiced text-to-speech, sentence-streamed",
            version=VERSION,
            voices=voices,
            supports_synthesize_streaming=True,
        )
    ]


def wake_programs(words: dict[str, str]) -> list[WakeProgram]:
    """``words``: wake word name -> the wake stage that detects it."""
    if not words:
        return []
    models = [
        WakeModel(
            name=word,
            attribution=ATTRIBUTION,
            installed=True,
            description=f"{word} ({stage})",
            version=VERSION,
            languages=["en"],
            phrase=word.replace("_", " "),
        )
        for word, stage in words.items()
    ]
    return [
        WakeProgram(
            name="voiced-wake",
            attribution=ATTRIBUTION,
            installed=True,
            description="voiced wake word detection",
            version=VERSION,
            models=models,
        )
    ]


def intent_programs(app: Any) -> list[IntentProgram]:
    names = list(app.settings.pipeline.intent)
    if not names:
        return []
    models = [
        IntentModel(
            name=name,
            attribution=ATTRIBUTION,
            installed=True,
            description=f"voiced intent recognizer {name}",
            version=VERSION,
            languages=[app.settings.language],
        )
        for name in names
    ]
    return [
        IntentProgram(
            name="voiced-intent",
            attribution=ATTRIBUTION,
            installed=True,
            description="voiced intent recognition (first match wins)",
            version=VERSION,
            models=models,
        )
    ]


def handle_programs(app: Any) -> list[HandleProgram]:
    names = [*app.settings.pipeline.intent, *app.settings.pipeline.handler]
    if not names:
        return []
    models = [
        HandleModel(
            name="+".join(names),
            attribution=ATTRIBUTION,
            installed=True,
            description="recognize the intent, act on it, answer",
            version=VERSION,
            languages=[app.settings.language],
        )
    ]
    return [
        HandleProgram(
            name="voiced-conversation",
            attribution=ATTRIBUTION,
            installed=True,
            description="voiced as a conversation agent",
            version=VERSION,
            models=models,
            supports_home_control=bool(app.settings.pipeline.handler),
        )
    ]


def describe(app: Any, services: set[str], wake_words: dict[str, str]) -> Info:
    return Info(
        asr=asr_programs(app) if "asr" in services else [],
        tts=tts_programs(app) if "tts" in services else [],
        wake=wake_programs(wake_words) if "wake" in services else [],
        intent=intent_programs(app) if "intent" in services else [],
        handle=handle_programs(app) if "handle" in services else [],
    )
