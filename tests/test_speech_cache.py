"""Short answers are synthesized once per voice (real Piper through the daemon's say)."""

from __future__ import annotations

import asyncio

import pytest
from pipeline_helpers import EventRecorder, no_config_file, overrides

from voiced.audio import AudioChunk
from voiced.daemon import prepare
from voiced.pipeline import Pipeline
from voiced.run import CANNOT_DO
from voiced.speech_cache import SpeechCache, pieces, prewarm

pytestmark = pytest.mark.slow


def test_a_sentence_is_kept_per_voice_and_long_ones_are_not_kept():
    cache = SpeechCache(entries=2, max_chars=30)
    voice, other_voice = ("piper", object()), ("piper", object())
    chunk = AudioChunk(b"\x01\x00" * 100)
    cache.put(voice, "Done.", chunk)
    assert cache.get(voice, "Done.").audio == chunk.audio
    assert cache.get(other_voice, "Done.") is None  # a reloaded voice is another voice
    cache.put(voice, "A sentence that is far too long to be a fixed answer.", chunk)
    assert cache.get(voice, "A sentence that is far too long to be a fixed answer.") is None
    cache.put(voice, "One.", chunk)
    cache.put(voice, "Two.", chunk)
    assert cache.get(voice, "Done.") is None  # least recently used, out first
    assert cache.hits == 1


async def test_the_same_short_answer_twice_is_synthesized_once_and_sounds_the_same(tmp_path):
    events = EventRecorder()
    settings, host = prepare(
        no_config_file(),
        overrides(
            pipeline={"source": [], "sink": ["wav"]},
            stages={"sink": {"wav": {"path": str(tmp_path)}}},
        ),
        [("recorder", events)],
    )
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    try:
        for _ in range(2):
            await pipeline.say("Turned on the desk lamp.")
    finally:
        await pipeline.stop()
    assert pipeline.speech_cache.hits == 1
    first, second = sorted(tmp_path.glob("*.wav"))
    assert first.read_bytes()[44:] == second.read_bytes()[44:]
    assert len(events.of("tts-audio")) == 2


def test_fixed_answers_stay_when_other_sentences_come_and_go():
    cache = SpeechCache(entries=1, max_chars=30, fixed=1)
    voice = ("piper", object())
    chunk = AudioChunk(b"\x01\x00" * 100)
    assert cache.put_fixed(voice, "Turned on the lights", chunk)
    assert not cache.put_fixed(voice, "Turned off the lights", chunk)  # full: refused
    cache.put(voice, "One.", chunk)
    cache.put(voice, "Two.", chunk)
    assert cache.get(voice, "Turned on the lights") is not None
    assert cache.get(voice, "One.") is None


def test_pieces_are_what_the_responder_asks_the_voice_for():
    answers = ["Turned on the lights", "Turned on the lights", "Done. Bye."]
    assert pieces(answers) == ["Turned on the lights", "Done.", "Bye."]


async def test_prewarm_synthesizes_each_fixed_answer_once_when_the_daemon_is_idle():
    from voiced_plugins.tts_piper import PiperOptions, PiperTts

    engine = PiperTts(PiperOptions())
    await asyncio.to_thread(engine.load)
    voice, cache = ("piper", engine), SpeechCache()
    waits: list[int] = []

    async def idle() -> None:
        waits.append(cache.fixed)

    answers = ["Turned on the lights", "Timer cancelled", "Turned on the lights"]
    kept = await prewarm(cache, voice, answers, asyncio.to_thread, idle)
    assert kept == 2 and cache.fixed == 2
    assert waits == [0, 1]  # asked before each synthesis, never in the middle of one
    audio = cache.get(voice, "Turned on the lights")
    assert audio is not None and audio.seconds > 0.5 and audio.format.rate == 22050
    assert await prewarm(cache, voice, answers, asyncio.to_thread, idle) == 0  # all there


async def test_the_daemon_caches_its_fixed_answers_after_it_is_ready_and_uses_them(tmp_path):
    events = EventRecorder()
    settings, host = prepare(
        no_config_file(),
        overrides(
            pipeline={"source": [], "sink": ["wav"]},
            stages={"sink": {"wav": {"path": str(tmp_path)}}},
        ),
        [("recorder", events)],
    )
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    try:
        assert events.of("ready") and pipeline.speech_cache.fixed == 0  # start-up not delayed
        kept = await asyncio.wait_for(pipeline.answers_cached, 300)
        assert kept == pipeline.speech_cache.fixed > 40  # HA's fixed answers for this home
        not_understood = settings.pipeline.not_understood  # and the daemon's own
        assert pipeline.speech_cache.has(pipeline.tts.active, not_understood)
        assert pipeline.speech_cache.has(pipeline.tts.active, CANNOT_DO)  # no handler for it
        assert not events.of("tts-start")  # the prewarm is no answer: no event for it
        cached = pipeline.speech_cache.get(pipeline.tts.active, "Turned on the lights")
        await pipeline.say("Turned on the lights")
    finally:
        await pipeline.stop()
    assert pipeline.speech_cache.hits == 2  # ours above, then the answer's
    (played,) = tmp_path.glob("*.wav")
    assert played.read_bytes()[44:] == cached.audio  # the answer is the cached audio


async def test_caching_the_fixed_answers_can_be_turned_off():
    settings, host = prepare(
        no_config_file(),
        overrides(pipeline={"source": [], "cache_fixed_answers": False}),
        [],
    )
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    try:
        assert pipeline.answers_cached is None
    finally:
        await pipeline.stop()
    assert pipeline.speech_cache.fixed == 0
