"""How words sound in a language (eSpeak NG's phonemes), for the sentence repair.

Whisper writes what it hears in the language's own spelling, and a slip is a word that
sounds like the one said: German "Schät" for "spät" (both [ʃɛːt]/[ʃpɛːt]: German says
*sp* as *schp*), "S" for "es" (both [ɛs]), "Die" for "Wie". The repair (repair.py) compares a
heard word with the grammar's words by spelling and by sound; its built-in sound key is
English metaphone, which reads German "sch" as *sk* and finds "spät" no nearer to "Schät"
than "schalt" is. For every other language espeak-ng speaks (~100, the Debian package
``espeak-ng`` the TTS fallback already uses), this module gives the word's phonemes in that
language instead, so "sounds like" means what it means to a speaker of it.

Two words with the same phonemes are homophones: to the ear the same word, so the repair
puts one for the other at no cost (like Mandarin's pinyin, homophones.py).

Phonemes are asked of espeak-ng lazily, a batch of words per call (one word a line, one line
back each), and remembered for the stage's life; a missing espeak-ng, or a language it does
not speak, leaves the repair with its spelling and metaphone.
"""

from __future__ import annotations

import functools
import logging
import shutil
import subprocess
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from rapidfuzz import fuzz

from voiced.api.languages import counts_characters, espeak_voice, primary

log = logging.getLogger(__name__)

_STRESS = str.maketrans("", "", "ˈˌ")
"""Stress marks: where espeak-ng puts them in one word says nothing of a slip."""
TIMEOUT_S = 20.0
"""Most one espeak-ng call may take (a batch of the whole vocabulary: ~2 s)."""


class Phonemes:
    """The phonemes of words in one language, from ``espeak-ng -q --ipa -v <voice>``."""

    def __init__(self, voice: str, program: str) -> None:
        self.voice = voice
        self.program = program
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    def of(self, words: Iterable[str]) -> dict[str, str]:
        """Each word's phonemes, stress marks left out ("" where espeak-ng gave none)."""
        wanted = list(dict.fromkeys(words))
        with self._lock:
            new = [w for w in wanted if w not in self._known]
        if new:
            said = self._spoken(new)
            with self._lock:
                self._known.update(said)
        with self._lock:
            return {w: self._known.get(w, "") for w in wanted}

    def alike(self, word: str, others: Sequence[str]) -> dict[str, float]:
        """How alike ``word`` sounds to each of ``others``, 0..1 (1: the same phonemes)."""
        said = self.of([word, *others])
        key = said[word]
        if not key:
            return {}
        return {o: fuzz.ratio(key, said[o]) / 100 for o in others if said[o]}

    def speaks(self) -> bool:
        """Whether espeak-ng knows this voice (it fails on one it has not)."""
        said = self._run("a")
        return bool(said and said[0].strip())

    def _spoken(self, words: list[str]) -> dict[str, str]:
        """espeak-ng's phonemes for ``words`` (one line of input each, one line back each)."""
        lines = self._run("\n".join(words))
        if lines is None:  # espeak-ng failed (logged): spelling alone for these words
            return dict.fromkeys(words, "")
        if len(lines) == len(words):
            return {w: ln.strip().translate(_STRESS) for w, ln in zip(words, lines, strict=True)}
        if len(words) == 1:  # a word espeak-ng read as two lines or none: no phonemes for it
            return {words[0]: ""}
        out: dict[str, str] = {}
        for word in words:  # the batch's lines did not line up: one word at a time
            out.update(self._spoken([word]))
        return out

    def _run(self, text: str) -> list[str] | None:
        try:
            done = subprocess.run(
                [self.program, "-q", "--ipa", "-b", "1", "-v", self.voice],
                input=text.encode(),
                capture_output=True,
                timeout=TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("espeak-ng gave no phonemes for %s: %s", self.voice, exc)
            return None
        if done.returncode != 0:
            log.warning("espeak-ng failed on %s: %s", self.voice, done.stderr.decode()[-200:])
            return None
        return done.stdout.decode(errors="replace").splitlines()


@functools.cache
def for_language(language: str, program: str = "espeak-ng") -> Phonemes | None:
    """Phonemes for the repair in ``language``; None for English (metaphone is English's
    own sound key, and the repair's thresholds were measured with it), for languages written
    without spaces (no repair), or when espeak-ng is missing or does not speak it. One per
    language and program for the process: what it has heard stays known across home changes."""
    if primary(language) == "en" or counts_characters(language):
        return None
    found = shutil.which(program)
    if found is None:
        log.info("no espeak-ng: the sentence repair for %s compares words by spelling", language)
        return None
    phonemes = Phonemes(espeak_voice(language), found)
    if not phonemes.speaks():
        log.info("espeak-ng speaks no %s: the sentence repair compares words by spelling", language)
        return None
    return phonemes


class Graph(Protocol):
    """What ``respelled`` asks of the repair's sentence graph (repair.SentenceGraph)."""

    sounds: Any
    following: dict[str, set[str]]

    def similar(self, word: str) -> tuple[tuple[str, float], ...]: ...


def respelled(text: str, graph: Graph) -> str:
    """``text`` with each word the grammar lacks put as the grammar's one word that sounds the
    same ("ist S" -> "ist es"): a homophone is no slip, so the repair may still change as many
    other words as it would. Unchanged without the language's phonemes."""
    if graph.sounds is None:
        return text
    words = text.split()
    for index, word in enumerate(words):
        folded = word.casefold()
        if folded in graph.following:
            continue
        same = [other for other, alike in graph.similar(folded) if alike >= 1.0]
        if len(same) == 1:
            words[index] = same[0]
    return " ".join(words)
