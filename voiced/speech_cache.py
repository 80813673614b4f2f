"""Audio of short answers, kept per voice: "Turned on the desk lamp." is synthesized once.

Three kinds of entries: sentences said once are kept least recently used first out (``put``);
the fixed answers of the response templates ("Turned on the lights", "Timer cancelled") are
synthesized once after start-up (:func:`prewarm`, off the loop, yielding to any work of the
daemon) and kept for the life of the voice, so a common answer's first audio costs nothing;
and the answers the handlers expect to give next ("6:17 PM" this minute and the next, "Timer
set for five minutes", "Yes" / "No, unlocked" for the home's entities as they are now) are
synthesized ahead of need in idle time (:func:`anticipate`) into a tier with a byte cap, which
each refresh replaces: what is no longer expected (the minute that passed, a state that
changed) is dropped, what is still expected stays, so nothing churns.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from voiced.audio import AudioChunk
from voiced.sentences import lead_clause, split_sentences

log = logging.getLogger(__name__)

ENTRIES = 64  # least recently used first out: a home says few distinct short answers
FIXED_ENTRIES = 128  # fixed answers kept for good (~1 s of 22 kHz audio each: ~5 MB at most)
MAX_CHARS = 80  # longer sentences (LLM answers) are rarely said twice
# Expected answers: ~1.5 s of 22 kHz audio (66 kB) each, so ~120 of them; a home's set is
# a few dozen (the time, the date, common timers and temperatures, a state answer an entity)
ANTICIPATED_BYTES = 8 * 1024 * 1024
POLL_S = 0.01  # how often a synthesis ahead of need checks whether real work has come


class SpeechCache:
    """Synthesized sentences by (engine name, engine object, text); safe from any thread.

    The engine object is part of the key, so a reloaded or changed voice never plays the old
    one's audio.
    """

    def __init__(
        self,
        entries: int = ENTRIES,
        max_chars: int = MAX_CHARS,
        fixed: int = FIXED_ENTRIES,
        anticipated_bytes: int = ANTICIPATED_BYTES,
    ) -> None:
        self.entries = entries
        self.max_chars = max_chars
        self.fixed_entries = fixed
        self.anticipated_cap = anticipated_bytes
        self.hits = 0
        self._audio: OrderedDict[tuple[str, int, str], AudioChunk] = OrderedDict()
        self._fixed: dict[tuple[str, int, str], AudioChunk] = {}
        self._anticipated: dict[tuple[str, int, str], AudioChunk] = {}
        self._anticipated_bytes = 0
        self._engines: dict[int, Any] = {}  # keeps keyed engines alive: an id is never reused
        self._lock = threading.Lock()

    def get(self, engine: tuple[str, Any], sentence: str) -> AudioChunk | None:
        key = (engine[0], id(engine[1]), sentence)
        with self._lock:
            chunk = self._fixed.get(key) or self._anticipated.get(key)
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
            self._drop_anticipated(key)
        return True

    def put_anticipated(self, engine: tuple[str, Any], sentence: str, chunk: AudioChunk) -> bool:
        """Keep an answer expected soon; False when it is too long or would pass the byte cap
        (nothing is pushed out for it: what is kept was expected as much)."""
        key = (engine[0], id(engine[1]), sentence)
        with self._lock:
            if key in self._fixed:
                return True
            size = len(chunk.audio)
            if len(sentence) > self.max_chars:
                return False
            if self._anticipated_bytes + size > self.anticipated_cap:
                return False
            self._engines[id(engine[1])] = engine[1]
            self._drop_anticipated(key)
            self._anticipated[key] = chunk
            self._anticipated_bytes += size
            self._audio.pop(key, None)
        return True

    def expect_only(self, engine: tuple[str, Any], sentences: Iterable[str]) -> int:
        """Drop the expected answers of ``engine`` that are not among ``sentences`` (the
        minute that passed, a state that changed) and those of any other voice; how many."""
        keep = {(engine[0], id(engine[1]), s) for s in sentences}
        with self._lock:
            stale = [key for key in self._anticipated if key not in keep]
            for key in stale:
                self._drop_anticipated(key)
        return len(stale)

    def _drop_anticipated(self, key: tuple[str, int, str]) -> None:
        chunk = self._anticipated.pop(key, None)
        if chunk is not None:
            self._anticipated_bytes -= len(chunk.audio)

    def forget_recent(self) -> None:
        """Drop the sentences said recently; the fixed answers stay."""
        with self._lock:
            self._audio.clear()

    def has(self, engine: tuple[str, Any], sentence: str) -> bool:
        key = (engine[0], id(engine[1]), sentence)
        with self._lock:
            return key in self._fixed or key in self._anticipated or key in self._audio

    @property
    def fixed(self) -> int:
        """How many fixed answers are kept."""
        with self._lock:
            return len(self._fixed)

    @property
    def anticipated(self) -> tuple[int, int]:
        """How many expected answers are kept, and their bytes of audio."""
        with self._lock:
            return len(self._anticipated), self._anticipated_bytes


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
    busy: Callable[[], bool] | None = None,
) -> int:
    """Synthesize the fixed ``answers`` with ``voice`` into ``cache``, one piece at a time in
    a worker thread, each after ``idle()`` returns (the daemon has no work it would delay);
    with ``busy``, a piece still being made when it turns true is stopped and made again
    once idle. Returns how many were kept; a piece the voice cannot say is skipped and
    logged."""
    kept = 0
    for piece in pieces(answers):
        if len(piece) > cache.max_chars or cache.has(voice, piece):
            continue
        chunk = None
        try:
            while chunk is None:
                await idle()
                if busy is None:
                    chunk = await in_thread(voice[1].synthesize, piece)
                else:
                    chunk = await _synthesize_unless_busy(voice[1], piece, in_thread, busy)
        except Exception as exc:  # one odd answer must not stop the rest
            log.info("fixed answer %r not cached: %s", piece, exc)
            continue
        if not cache.put_fixed(voice, piece, chunk):
            break
        kept += 1
    return kept


@dataclass
class Anticipated:
    """What one :func:`anticipate` pass did."""

    wanted: int = 0  # pieces expected (of a length the cache keeps)
    made: int = 0  # synthesized and kept now
    dropped: int = 0  # kept before, no longer expected
    yielded: int = 0  # stopped midway because real work came (made on a later pass)
    full: int = 0  # not kept: the byte cap was reached


async def anticipate(
    cache: SpeechCache,
    voice: tuple[str, Any],
    answers: Iterable[str],
    in_thread: Callable[..., Awaitable[Any]],
    idle: Callable[[], Awaitable[None]],
    busy: Callable[[], bool],
) -> Anticipated:
    """Make ``cache``'s expected answers for ``voice`` the pieces of ``answers``: drop the
    others, synthesize the missing ones in a worker thread, each after ``idle()`` returns.
    A synthesis still running when ``busy()`` turns true is stopped at once (an engine with
    ``interruptible``; others finish their piece): real work never waits for it."""
    wanted = [piece for piece in pieces(answers) if len(piece) <= cache.max_chars]
    done = Anticipated(wanted=len(wanted), dropped=cache.expect_only(voice, wanted))
    for piece in wanted:
        if cache.has(voice, piece):
            continue
        await idle()
        try:
            chunk = await _synthesize_unless_busy(voice[1], piece, in_thread, busy)
        except Exception as exc:  # one odd answer must not stop the rest
            log.info("expected answer %r not made: %s", piece, exc)
            continue
        if chunk is None:
            done.yielded += 1
        elif cache.put_anticipated(voice, piece, chunk):
            done.made += 1
        else:
            done.full += 1
    return done


async def _synthesize_unless_busy(
    engine: Any, piece: str, in_thread: Callable[..., Awaitable[Any]], busy: Callable[[], bool]
) -> AudioChunk | None:
    """``piece`` synthesized, or None when real work came and the synthesis was stopped."""
    start = getattr(engine, "interruptible", None)
    if start is None:
        return await in_thread(engine.synthesize, piece)
    job = start(piece)
    task = asyncio.ensure_future(in_thread(job.run))
    try:
        while not task.done():
            await asyncio.wait({task}, timeout=POLL_S)
            if not task.done() and busy():
                job.stop()
    except asyncio.CancelledError:  # the daemon stops: so does the synthesis, in its thread
        job.stop()
        task.add_done_callback(_quietly)  # its "stopped" error is expected, not news
        raise
    try:
        return task.result()
    except Exception:
        if job.stopped:
            return None
        raise


def _quietly(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
