"""Answers made ahead of need: what the handlers expect to say soon is what they then say.

Real hassil on the repo's home, real handlers; the daemon part with the real Piper voice and
real speech (tests/speech.py) through the real pipeline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt

import pytest
from home_stages import HOME
from pipeline_helpers import overrides, started_pipeline
from speech import silence, steady_piper
from test_handle_builtin import App, handle
from voiced_plugins.handle_builtin import (
    BuiltinHandler,
    BuiltinOptions,
    ResponsesHandler,
    ResponsesOptions,
)

from voiced.audio import write_wav


@pytest.fixture
async def builtin(hassil):
    handler = BuiltinHandler(BuiltinOptions(), App(asyncio.get_running_loop(), hassil))
    handler.load()
    yield handler
    handler.close()


@pytest.fixture
async def responses(hassil) -> ResponsesHandler:
    handler = ResponsesHandler(ResponsesOptions(), App(asyncio.get_running_loop(), hassil))
    handler.load()
    return handler


async def test_the_time_said_now_was_expected_this_minute_or_the_next(builtin, hassil):
    expected = builtin.anticipated_answers()
    response = await handle(builtin, hassil, "what time is it")
    assert response.speech in expected[:2]  # the minute asked in, or the next if it turned
    assert (await handle(builtin, hassil, "what is the date")).speech in expected


def test_the_minute_after_is_expected_too(builtin):
    at = dt.datetime(2026, 12, 1, 18, 59, 30)
    assert builtin.anticipated_answers(at)[:2] == ["6:59 PM", "7:00 PM"]


@pytest.mark.parametrize("said", ["set a timer for five minutes", "set a timer for 5 minutes"])
async def test_a_common_timer_is_confirmed_with_an_expected_answer(builtin, hassil, said):
    expected = builtin.anticipated_answers()
    assert (await handle(builtin, hassil, said)).speech in expected


async def test_the_timer_status_first_sentence_is_expected_while_timers_run(builtin, hassil):
    assert not [a for a in builtin.anticipated_answers() if "running timers" in a]
    await handle(builtin, hassil, "set a timer for five minutes")
    await handle(builtin, hassil, "set a timer for ten minutes")
    expected = builtin.anticipated_answers()
    answer = (await handle(builtin, hassil, "how much time is left on my timer")).speech
    first = answer.split(". ")[0] + "."
    assert first == "2 running timers." and first in expected
    assert answer not in expected  # the time left changes every second: not made ahead


async def test_a_state_question_is_answered_as_the_home_is_now(responses, hassil):
    expected = responses.anticipated_answers()
    assert (await handle(responses, hassil, "is the front door locked")).speech in expected
    said = (await handle(responses, hassil, "what is the outside temperature")).speech
    assert said == "Outside temperature is 12 °C" and said in expected
    entities = responses.app.hassil.home.entities
    index = next(i for i, e in enumerate(entities) if e.id == "lock.front_door")
    locked = entities[index]
    entities[index] = dataclasses.replace(locked, state="unlocked")  # the state changed
    try:
        now = responses.anticipated_answers()
        answer = (await handle(responses, hassil, "is the front door locked")).speech
        assert answer == "No, unlocked" and answer in now and answer not in expected
    finally:
        entities[index] = locked


async def test_a_set_temperature_is_confirmed_with_an_expected_answer(responses, hassil):
    expected = responses.anticipated_answers()
    said = "set the temperature in the hallway to 21 degrees"
    assert (await handle(responses, hassil, said)).speech in expected


async def test_expected_answers_are_no_junk(builtin, responses):
    answers = builtin.anticipated_answers() + responses.anticipated_answers()
    assert len(answers) == len(set(answers)) and len(answers) < 100
    assert not [a for a in answers if "None" in a or not a.strip() or a.endswith((" is", ","))]
    assert not [a for a in answers if "person named" in a]  # only what may be asked here


@pytest.mark.slow
async def test_the_daemon_answers_what_time_is_it_from_audio_made_ahead(tmp_path):
    """Real speech through the running daemon: the time's answer plays from the cache."""
    wav = tmp_path / "time.wav"
    write_wav(wav, silence(0.5) + steady_piper("What time is it?") + silence(1.2))
    config = overrides(
        pipeline={
            "source": [],
            "sink": ["wav"],
            "handler": ["builtin"],  # the time is its answer; ~20 expected, not ~60
            "cache_fixed_answers": False,
        },
        stages={
            "intent": {"hassil": {"home": str(HOME)}},
            "sink": {"wav": {"path": str(tmp_path)}},
        },
    )
    async with started_pipeline(config) as pipeline:
        await asyncio.wait_for(pipeline.anticipated_once.wait(), 200)
        made = pipeline.anticipation
        assert made is not None and made.made == made.wanted > 20 and not made.full
        count, size = pipeline.speech_cache.anticipated
        assert count == made.made and 0 < size <= pipeline.speech_cache.anticipated_cap
        assert not pipeline.recorder.of("tts-start")  # made ahead is no answer: no event
        from voiced_plugins.io_wav import FileSource, FileSourceOptions

        source = FileSource(FileSourceOptions(path=str(wav), realtime=True), pipeline)
        source.load()
        await asyncio.wait_for(pipeline.run_site(source), 60)
        await asyncio.wait_for(pipeline.drain(), 60)
        (started,) = pipeline.recorder.of("tts-start")
        voice = pipeline.tts.active
        cached = pipeline.speech_cache.get(voice, started.data["text"])
    assert cached is not None, started.data["text"]  # the answer said was one made ahead
    (played,) = [p for p in tmp_path.glob("*.wav") if p != wav]
    assert played.read_bytes()[44:] == cached.audio


@pytest.mark.slow
async def test_after_a_command_the_daemon_expects_anew(tmp_path, monkeypatch):
    """Two timers set by real speech: "2 running timers." is made ahead at the next idle
    moment, not at the next periodic pass (set here to an hour)."""
    import voiced.pipeline

    monkeypatch.setattr(voiced.pipeline, "ANTICIPATE_EVERY", 3600.0)
    wav = tmp_path / "timers.wav"
    write_wav(
        wav,
        silence(0.5)
        + steady_piper("Set a timer for five minutes.")
        + silence(1.5)
        + steady_piper("Set a timer for ten minutes.")
        + silence(1.5),
    )
    config = overrides(
        pipeline={"source": [], "handler": ["builtin"], "cache_fixed_answers": False},
        stages={"intent": {"hassil": {"home": str(HOME)}}},
        conversation={"follow_up": "off"},
    )
    async with started_pipeline(config) as pipeline:
        await asyncio.wait_for(pipeline.anticipated_once.wait(), 200)
        voice = pipeline.tts.active
        assert not pipeline.speech_cache.has(voice, "2 running timers.")
        from voiced_plugins.io_wav import FileSource, FileSourceOptions

        source = FileSource(FileSourceOptions(path=str(wav), realtime=True), pipeline)
        source.load()
        await asyncio.wait_for(pipeline.run_site(source), 60)
        await asyncio.wait_for(pipeline.drain(), 60)
        timers = [e for e in pipeline.recorder.of("timer") if e.data["action"] == "started"]
        assert len(timers) == 2

        async def expected() -> None:
            while not pipeline.speech_cache.has(voice, "2 running timers."):
                await asyncio.sleep(0.1)

        await asyncio.wait_for(expected(), 120)  # the hourly pass is far off
