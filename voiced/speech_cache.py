"""Audio of short answers, kept per voice: "Turned on the desk lamp." is synthesized once."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import replace
from typing import Any

from voiced.audio import AudioChunk

ENTRIES = 64  # least recently used first out: a home says few distinct short answers
MAX_CHARS = 80  # longer sentences (LLM answers) are rarely said twice


class SpeechCache:
    """Synthesized sentences by (engine name, engine object, text); safe from any thread.

    The engine object is part of the key, so a reloaded or changed voice never plays the old
    one's audio.
    """

    def __init__(self, entries: int = ENTRIES, max_chars: int = MAX_CHARS) -> None:
        self.entries = entries
        self.max_chars = max_chars
        self.hits = 0
        self._audio: OrderedDict[tuple[str, int, str], AudioChunk] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, engine: tuple[str, Any], sentence: str) -> AudioChunk | None:
        key = (engine[0], id(engine[1]), sentence)
        with self._lock:
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
            self._audio[(engine[0], id(engine[1]), sentence)] = chunk
            while len(self._audio) > self.entries:
                self._audio.popitem(last=False)
