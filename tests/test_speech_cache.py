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


def test_expected_answers_are_kept_within_a_byte_cap_and_replaced_as_a_whole():
    chunk = AudioChunk(b"\x01\x00" * 100)  # 200 bytes
    cache = SpeechCache(anticipated_bytes=500)
    voice, other_voice = ("piper", object()), ("piper", object())
    assert cache.put_anticipated(voice, "6:17 PM", chunk)
    assert cache.put_anticipated(voice, "6:18 PM", chunk)
    assert not cache.put_anticipated(voice, "Yes", chunk)  # past the cap: refused, none out
    assert cache.anticipated == (2, 400)
    assert cache.get(voice, "6:17 PM") is not None and cache.get(other_voice, "6:17 PM") is None
    # the next pass expects the minute after: the one that passed goes, the other stays
    assert cache.expect_only(voice, ["6:18 PM", "6:19 PM"]) == 1
    assert cache.anticipated == (1, 200) and cache.has(voice, "6:18 PM")
    assert cache.put_anticipated(voice, "6:19 PM", chunk)
    cache.forget_recent()  # recent sentences go; expected ones are not recent ones
    assert cache.has(voice, "6:19 PM")
    assert cache.expect_only(other_voice, []) == 2  # another voice now: none of this one's
    assert cache.anticipated == (0, 0)


@pytest.fixture(scope="module")
def piper_voice():
    from voiced_plugins.tts_piper import PiperOptions, PiperTts

    engine = PiperTts(PiperOptions())
    engine.load()
    return ("piper", engine)


def test_a_synthesis_made_ahead_can_be_stopped_and_the_voice_goes_on(piper_voice):
    import threading

    engine = piper_voice[1]
    long_text = "The weather today is sunny and warm with a light breeze from the west, " * 3
    job = engine.interruptible(long_text)
    stopper = threading.Timer(0.05, job.stop)
    stopper.start()
    with pytest.raises(Exception, match="terminate"):
        job.run()
    assert job.stopped
    before = engine.interruptible("Yes")
    before.stop()
    with pytest.raises(InterruptedError):
        before.run()  # stopped before it began: nothing is synthesized
    assert engine.synthesize("Yes").seconds > 0.2  # the voice is free and well


async def test_anticipate_makes_what_is_expected_and_drops_what_is_not(piper_voice):
    from voiced.speech_cache import anticipate

    cache = SpeechCache()

    async def idle() -> None:
        pass

    first = await anticipate(cache, piper_voice, ["6:17 PM", "6:18 PM"], asyncio.to_thread,
                             idle, lambda: False)  # fmt: skip
    assert (first.wanted, first.made, first.dropped, first.yielded) == (2, 2, 0, 0)
    again = await anticipate(cache, piper_voice, ["6:18 PM", "6:19 PM", "Turned on the lights"],
                             asyncio.to_thread, idle, lambda: False)  # fmt: skip
    assert (again.made, again.dropped) == (2, 1)  # 6:18 stayed: not made twice
    assert cache.get(piper_voice, "6:17 PM") is None
    assert cache.get(piper_voice, "6:19 PM").format.rate == 22050


async def test_anticipate_yields_at_once_when_real_work_comes(piper_voice):
    from voiced.speech_cache import anticipate

    cache = SpeechCache()
    work = asyncio.Event()

    async def idle() -> None:
        pass

    async def real_work_comes() -> None:
        await asyncio.sleep(0.05)
        work.set()

    long_text = "The weather today is sunny and warm with a light breeze from the west and more"
    asyncio.get_running_loop().create_task(real_work_comes())
    done = await anticipate(cache, piper_voice, [long_text], asyncio.to_thread, idle, work.is_set)
    assert (done.made, done.yielded) == (0, 1)  # stopped midway, nothing half-made kept
    assert not cache.has(piper_voice, long_text)
    assert piper_voice[1]._lock.acquire(blocking=False)  # the voice is free for the answer
    piper_voice[1]._lock.release()


async def test_a_wyoming_synthesize_of_a_fixed_answer_is_the_cached_audio():
    """Home Assistant using voiced as its TTS (Wyoming ``synthesize``) gets the cache too."""
    from pipeline_helpers import started_pipeline
    from wyoming.audio import AudioChunk as WyomingChunk
    from wyoming.client import AsyncTcpClient
    from wyoming.tts import Synthesize

    config = overrides(
        pipeline={"source": [], "service": ["wyoming"], "anticipate_answers": False},
        stages={"service": {"wyoming": {"uri": "tcp://127.0.0.1:0"}}},
    )
    async with started_pipeline(config) as pipeline:
        await asyncio.wait_for(pipeline.answers_cached, 300)
        cached = pipeline.speech_cache.get(pipeline.tts.active, "Turned on the lights")
        hits = pipeline.speech_cache.hits
        host, port = pipeline.stage("service", "wyoming").address
        audio = b""
        async with AsyncTcpClient(host, port) as client:
            await client.write_event(Synthesize(text="Turned on the lights").event())
            while (event := await asyncio.wait_for(client.read_event(), 60)).type != "audio-stop":
                if event.type == "audio-chunk":
                    audio += WyomingChunk.from_event(event).audio
    assert cached is not None and audio == cached.audio
    assert pipeline.speech_cache.hits == hits + 1


async def test_a_synthesis_made_ahead_is_stopped_quietly_when_the_daemon_stops(piper_voice):
    from voiced.speech_cache import anticipate

    unretrieved: list[dict] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context))

    async def idle() -> None:
        pass

    long_text = "The weather today is sunny and warm with a light breeze from the west and more"
    cache = SpeechCache()
    making = asyncio.ensure_future(
        anticipate(cache, piper_voice, [long_text], asyncio.to_thread, idle, lambda: False)
    )
    await asyncio.sleep(0.05)
    making.cancel()
    with pytest.raises(asyncio.CancelledError):
        await making
    while piper_voice[1]._lock.locked():  # the thread stops within a node of the graph
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    import gc

    gc.collect()  # an unretrieved task exception is reported when the task is freed
    await asyncio.sleep(0)
    loop.set_exception_handler(None)
    assert not unretrieved and not cache.has(piper_voice, long_text)
