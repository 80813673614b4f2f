"""What voiced hears in the recording (the configured ASR), and a test sentence played."""

from __future__ import annotations

import asyncio
from pathlib import Path

from voiced.setup.console import SetupError

TEST_SENTENCES = {  # language (primary): a short sentence for the speaker test
    "en": "Hello, this is voiced. If you hear me, the speaker works.",
    "de": "Hallo, hier ist voiced. Wenn du mich hörst, funktioniert der Lautsprecher.",
    "fr": "Bonjour, ici voiced. Si vous m'entendez, le haut-parleur fonctionne.",
    "zh": "你好，我是 voiced。如果你听到我，扬声器就好了。",
}


def test_sentence(language: str) -> str:
    from voiced.languages import primary

    return TEST_SENTENCES.get(primary(language), TEST_SENTENCES["en"])


def transcribe(config: Path, pcm: bytes, language: str) -> tuple[str, str]:
    """(engine, text) of 16 kHz mono PCM through the config's ASR chain."""
    from voiced.daemon import prepare
    from voiced.pipeline import Pipeline

    settings, host = prepare(config)
    pipeline = Pipeline(settings, host)
    pipeline.build(only={"asr"})
    if pipeline.asr is None:
        raise SetupError("no speech recognition configured")
    try:
        pipeline.asr.load()
        engine, transcript = pipeline.asr.call("transcribe", pcm, language)
    except Exception as exc:
        raise SetupError(f"speech recognition failed: {type(exc).__name__}: {exc}") from None
    finally:
        pipeline.asr.close()
    return engine, transcript.text.strip()


def play_sentence(config: Path, text: str) -> None:
    """Speak ``text`` with the config's TTS through its sinks (the speaker)."""
    from voiced.daemon import prepare
    from voiced.pipeline import Pipeline

    settings, host = prepare(config)
    settings.pipeline.service = []

    async def speak() -> None:
        pipeline = Pipeline(settings, host)
        pipeline.build(only={"tts", "sink"})
        await pipeline.start()
        try:
            await pipeline.say(text)
        finally:
            await pipeline.stop()

    try:
        asyncio.run(speak())
    except Exception as exc:
        raise SetupError(f"playing the test sentence failed: {type(exc).__name__}: {exc}") from None
