"""Audio of short answers, kept per voice: "Turned on the desk lamp." is synthesized once.

Two kinds of entries: sentences said once are kept least recently used first out (``put``);
the fixed answers of the response templates ("Turned on the lights", "Timer cancelled") are
synthesized once after start-up (:func:`prewarm`, off the loop, yielding to any work of the
daemon) and kept for the life of the voice, so a common answer's first audio costs nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from typing import Any

from voiced.audio import AudioChunk
from voiced.sentences import lead_clause, split_sentences

log = logging.getLogger(__name__)

ENTRIES = 64  # least recently used first out: a home says few distinct short answers
FIXED_ENTRIES = 128  # fixed answers kept for good (~1 s of 22 kHz audio each: ~5 MB at most)
MAX_CHARS = 80  # longer sentences (LLM answers) are rarely said twice


class SpeechCache:
    """Synthesized sentences by (engine name, engine object, text); safe from any thread.

    The engine object is part of the key, so a reloaded or changed voice never plays the old
    one's audio.
    """

    def __init__(
        self, entries: int = ENTRIES, max_chars: int = MAX_CHARS, fixed: int = FIXED_ENTRIES
    ) -> None:
        self.entries = entries
        self.max_chars = max_chars
        self.fixed_entries = fixed
        self.hits = 0
        self._audio: OrderedDict[tuple[str, int, str], AudioChunk] = OrderedDict()
        self._fixed: dict[tuple[str, int, str], AudioChunk] = {}
        self._engines: dict[int, Any] = {}  # keeps keyed engines alive: an id is never reused
        self._lock = threading.Lock()

    def get(self, engine: tuple[str, Any], sentence: str) -> AudioChunk | None:
        key = (engine[0], id(engine[1]), sentence)
        with self._lock:
            chunk = self._fixed.get(key)
            if chunk is None:
                chunk = self._audio.get(key)
                if chunk is None:
                    return None
                self._audio.move_to_end(key)
            self.hits += 1
        return replace(chunk, timestamp=time.monotonic())

    def put(self, engine: tuple[str, Any], sentence: str, chunk: AudioChunk) -> None:
        if len(sentence) > self.max_chars or self.entries <= 0:
            return
        with self._lock:
            self._engines[id(engine[1])] = engine[1]
            self._audio[(engine[0], id(engine[1]), sentence)] = chunk
            while len(self._audio) > self.entries:
                self._audio.popitem(last=False)

    def put_fixed(self, engine: tuple[str, Any], sentence: str, chunk: AudioChunk) -> bool:
        """Keep a fixed answer for good; False when it is too long or the cache is full."""
        key = (engine[0], id(engine[1]), sentence)
        with self._lock:
            if len(sentence) > self.max_chars or len(self._fixed) >= self.fixed_entries:
                return False
            self._engines[id(engine[1])] = engine[1]
            self._fixed[key] = chunk
            self._audio.pop(key, None)
        return True

    def forget_recent(self) -> None:
        """Drop the sentences said recently; the fixed answers stay."""
        with self._lock:
            self._audio.clear()

    def has(self, engine: tuple[str, Any], sentence: str) -> bool:
        key = (engine[0], id(engine[1]), sentence)
        with self._lock:
            return key in self._fixed or key in self._audio

    @property
    def fixed(self) -> int:
        """How many fixed answers are kept."""
        with self._lock:
            return len(self._fixed)


def pieces(answers: Iterable[str]) -> list[str]:
    """The pieces the responder will ask the voice for, in order, without repeats: each
    answer as :func:`voiced.responder.speak` splits it."""
    seen: dict[str, None] = {}
    for answer in answers:
        for piece in lead_clause(split_sentences(answer)):
            seen.setdefault(piece, None)
    return list(seen)


async def prewarm(
    cache: SpeechCache,
    voice: tuple[str, Any],
    answers: Iterable[str],
    in_thread: Callable[..., Awaitable[Any]],
    idle: Callable[[], Awaitable[None]],
) -> int:
    """Synthesize the fixed ``answers`` with ``voice`` into ``cache``, one piece at a time in
    a worker thread, each after ``idle()`` returns (the daemon has no work it would delay).
    Returns how many were kept; a piece the voice cannot say is skipped and logged."""
    kept = 0
    for piece in pieces(answers):
        if len(piece) > cache.max_chars or cache.has(voice, piece):
            continue
        await idle()
        try:
            chunk = await in_thread(voice[1].synthesize, piece)
        except Exception as exc:  # one odd answer must not stop the rest
            log.info("fixed answer %r not cached: %s", piece, exc)
            continue
        if not cache.put_fixed(voice, piece, chunk):
            break
        kept += 1
    return kept
