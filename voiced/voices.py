"""A voice for every language of the config: the configured TTS chain where it speaks the
language, else eSpeak NG in that language.

A TTS engine says what it speaks in ``info["language"]`` (a Piper voice: its espeak voice,
``en-us``, ``de``; eSpeak NG: its voice's language). An engine that says nothing (a remote
peer) is taken at its word. For every other language of the config (the top-level one and
each site's), the voice ``[voices]`` names for it (``de = "de_DE-thorsten-medium"``: the first
TTS engine with that voice) is loaded at start-up; where none is named (or it cannot load), a
chain of one ``espeak`` stage speaking that language, and a ``voice-language`` event says so;
when even that cannot load, answers in that language stay on the configured voice and the
event says why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from voiced.chain import EngineChain
from voiced.events import Event, VoiceLanguage
from voiced.languages import espeak_voice, same_language

log = logging.getLogger(__name__)

FALLBACK_ENGINE = "espeak"


def voice_language(chain: EngineChain) -> tuple[str, str | None]:
    """(name, language) of the chain's serving engine; language None when it names none."""
    name, engine = chain.active
    language = (getattr(engine, "info", None) or {}).get("language")
    return name, str(language) if language else None


class LanguageVoices:
    """The TTS chain for each language; ``build(language)`` makes an espeak stage for one."""

    def __init__(
        self,
        main: EngineChain,
        build: Callable[[str, str], Any] | None,
        emit: Callable[[Event], None],
        site_id: str,
        voices: dict[str, str] | None = None,
    ) -> None:
        self.voices = voices or {}  # language -> a voice of the main engine for it
        self.main = main
        self.build = build
        self.emit = emit
        self.site_id = site_id
        self.chains: dict[str, EngineChain] = {}

    def prepare(self, languages: list[str]) -> None:
        """Load a fallback voice for each language the configured one does not speak (runs in
        a worker thread at start-up)."""
        voice, spoken = voice_language(self.main)
        for language in dict.fromkeys(languages):
            if spoken is None or same_language(language, spoken):
                continue
            own = self._own_voice(language)
            self.chains[language] = own or self._fallback(language, voice, spoken)

    def _own_voice(self, language: str) -> EngineChain | None:
        """The main engine with the voice ``[voices]`` names for ``language``, if it loads."""
        wanted = next((v for k, v in self.voices.items() if same_language(k, language)), None)
        if wanted is None or self.build is None:
            return None
        engine = self.main.engines[0][0]
        try:
            chain = EngineChain("tts", [(engine, self.build(engine, wanted))], lambda event: None)
            chain.load()
        except Exception as exc:
            log.warning(
                "answers in %s: voice %s of %s cannot load (%s)", language, wanted, engine, exc
            )
            return None
        log.info("answers in %s: %s voice %s", language, engine, wanted)
        return chain

    def _fallback(self, language: str, voice: str, spoken: str) -> EngineChain:
        wanted = espeak_voice(language)
        why = f"the configured voice {voice} speaks {spoken}, not {language}"
        if self.build is None:
            return self._keep(language, voice, spoken, f"{why}; no {FALLBACK_ENGINE} stage")
        try:
            stage = self.build(FALLBACK_ENGINE, wanted)
            chain = EngineChain("tts", [(FALLBACK_ENGINE, stage)], lambda event: None)
            chain.load()
        except Exception as exc:
            reason = f"{why}; {FALLBACK_ENGINE} cannot speak it ({exc}): keeping {voice}"
            return self._keep(language, voice, spoken, reason)
        log.warning("answers in %s: %s; speaking them with espeak-ng (%s)", language, why, wanted)
        self.emit(
            VoiceLanguage(
                language, voice, spoken, FALLBACK_ENGINE, wanted, f"{why}: eSpeak NG speaks it"
            ).event(None, self.site_id)
        )
        return chain

    def _keep(self, language: str, voice: str, spoken: str, reason: str) -> EngineChain:
        log.warning("answers in %s: %s", language, reason)
        self.emit(
            VoiceLanguage(language, voice, spoken, None, None, reason).event(None, self.site_id)
        )
        return self.main

    def chain(self, language: str | None) -> EngineChain:
        """The chain that speaks ``language`` (the configured one for any it was not told of)."""
        return self.chains.get(language or "", self.main)

    def close(self) -> None:
        for chain in self.chains.values():
            if chain is not self.main:
                for _, engine in chain.loaded:
                    engine.close()
