"""Speaking an answer: sentence by sentence, so the first sentence plays while the rest is made.

A long first sentence is cut after its first clause (Piper makes each piece in one call: the
first audio waits for the first piece only), and short answers come from the speech cache."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from voiced import events as ev
from voiced.audio import AudioChunk
from voiced.chain import EngineChain
from voiced.context import RunContext
from voiced.events import Event
from voiced.sentences import lead_clause, split_sentences
from voiced.speech_cache import SpeechCache

AHEAD = 2  # sentences synthesized ahead of playback: bounds memory for very long answers


async def speak(
    text: str,
    context: RunContext,
    tts: EngineChain,
    sinks: list[Any],
    emit: Callable[[Event], None],
    in_thread: Callable[..., Awaitable[Any]],
    cache: SpeechCache | None = None,
) -> None:
    """Synthesize ``text`` and stream it to every sink; emits tts-start/-audio/-end events.

    A sentence in ``cache`` for the active voice plays without being synthesized again."""
    sentences = await in_thread(split_sentences, text)  # long text: CPU work off the loop
    sentences = lead_clause(sentences)  # the first audio from a few words, not a long sentence
    if not sentences:
        return
    run, site = context.run_id, context.site_id
    started = time.monotonic()
    emit(ev.TtsStart(text, len(sentences)).event(run, site))
    queues: list[asyncio.Queue[AudioChunk | None]] = [asyncio.Queue(AHEAD) for _ in sinks]
    players = [
        asyncio.create_task(sink.play(_drain(queue), run, site), name=f"play:{run[:8]}")
        for sink, queue in zip(sinks, queues, strict=True)
    ]
    audio_seconds = 0.0
    engine = ""
    try:
        for index, sentence in enumerate(sentences):
            engine, chunk = await synthesize(tts, sentence, run, site, in_thread, cache)
            audio_seconds += chunk.seconds
            if index == 0:
                first = ev.TtsAudio(
                    engine=engine,
                    sentence=1,
                    time_to_first_audio_s=round(time.monotonic() - started, 4),
                    rate=chunk.format.rate,
                )
                emit(first.event(run, site))
            for queue, player in zip(queues, players, strict=True):
                await _put(queue, chunk, player)
        elapsed = time.monotonic() - started
        end = ev.TtsEnd(
            engine=engine,
            sentences=len(sentences),
            duration_s=round(elapsed, 4),
            audio_seconds=round(audio_seconds, 3),
            rtf=round(elapsed / audio_seconds, 4) if audio_seconds else None,
        )
        emit(end.event(run, site))
        for queue, player in zip(queues, players, strict=True):
            await _put(queue, None, player)
        await asyncio.gather(*players)
        emit(ev.PlaybackEnd(len(sinks)).event(run, site))
    finally:
        for player in players:
            if not player.done():
                player.cancel()
        await asyncio.gather(*players, return_exceptions=True)


async def synthesize(
    tts: EngineChain,
    sentence: str,
    run_id: str,
    site_id: str,
    in_thread: Callable[..., Awaitable[Any]],
    cache: SpeechCache | None = None,
) -> tuple[str, AudioChunk]:
    """One sentence on the TTS chain, or from ``cache``: (engine name, audio)."""
    voice = tts.active
    cached = cache.get(voice, sentence) if cache is not None else None
    if cached is not None:
        return voice[0], cached
    engine, chunk = await in_thread(
        tts.call, "synthesize", sentence, run_id=run_id, site_id=site_id
    )
    if cache is not None and engine == voice[0]:
        cache.put(voice, sentence, chunk)
    return engine, chunk


async def _put(queue: asyncio.Queue[Any], item: Any, player: asyncio.Task[None]) -> None:
    """Queue audio for a sink, but don't wait forever on a sink that already stopped."""
    if player.done():
        player.result()  # raises the sink's error; a sink that ended early just gets no more
        return
    put = asyncio.ensure_future(queue.put(item))
    await asyncio.wait({put, player}, return_when=asyncio.FIRST_COMPLETED)
    if not put.done():
        put.cancel()
        player.result()


async def _drain(queue: asyncio.Queue[AudioChunk | None]) -> AsyncIterator[AudioChunk]:
    while (chunk := await queue.get()) is not None:
        yield chunk
