"""A conversation at one site, end to end: wake word, command, answer, barge-in, follow-up, mute.

Each test plays a scripted timeline (real speech from the bundled Piper voice) through the real
pipeline: the file source, openWakeWord, webrtc VAD, Whisper, hassil + builtin handler, Piper and
the WAV sink. Timelines run faster than real time where only the order matters, and at real time
where the answer must be playing when the next words come (barge-in, follow-up, mute): those
are gated, streaming silence until the pipeline got there (``Gate``), so a busy machine makes
them longer, never wrong.
"""

from __future__ import annotations

import asyncio
import time
import wave
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pipeline_helpers import EventRecorder, overrides
from speech import piper, silence

from voiced.audio import PIPELINE_FORMAT, AudioChunk, write_wav
from voiced.config import deep_merge
from voiced.daemon import prepare
from voiced.hookspecs import hookimpl
from voiced.pipeline import Pipeline

pytestmark = pytest.mark.slow

WAKE = "hey jarvis"
LONG_ANSWER = (
    "I am sorry, I did not understand that. You can ask me for the time or the date, turn "
    "lights on and off, set timers, and ask about the weather. Please try again. If I still "
    "do not understand, speak a little closer to the microphone, or say it in other words."
)  # ~15 s of speech
QUESTION = "Sorry, I did not catch that. What would you like me to do?"


def timeline(path: Path, *parts: str | float) -> Path:
    """A WAV of spoken parts (text) and pauses (seconds), in order."""
    audio = b""
    for part in parts:
        audio += silence(part) if isinstance(part, float | int) else piper(part)
    write_wav(path, audio)
    return path


@dataclass
class Gate:
    """A point in a gated timeline: silence streams on (a microphone never stops) until
    ``until(events)`` holds, then ``then(pipeline)`` runs; however long a loaded machine takes
    to get there, the next words come at the same point of the conversation."""

    until: Callable[[EventRecorder], bool] = lambda events: True
    then: Callable[[Pipeline], None] = lambda pipeline: None
    limit: float = 120.0  # seconds: past it the pipeline never got there


class GatedTimeline:
    """A plugin with the source ``gated``: ``parts`` (text, seconds of silence, gates) at the
    pace of speech."""

    def __init__(self, *parts: str | float | Gate) -> None:
        self.parts = parts
        self.recorder = EventRecorder()

    @hookimpl
    def voiced_register_stages(self, register: Any) -> None:
        register("source", "gated", lambda options, app: GatedSource(self, app))


class GatedSource:
    """The source of a ``GatedTimeline`` (16 kHz mono, 20 ms chunks, real time)."""

    finite = True
    live = False  # paced like a microphone, but never dropped when ASR falls behind on a busy
    hears_playback = False  # machine: test_pipeline covers the overload policy

    def __init__(self, timeline: GatedTimeline, app: Any) -> None:
        self.timeline = timeline
        self.app = app
        self.site_id = app.settings.site_id if app else "default"

    def load(self) -> None:
        pass

    def close(self) -> None:
        pass

    async def chunks(self) -> AsyncIterator[AudioChunk]:
        step = PIPELINE_FORMAT.bytes_per_second // 50  # 20 ms
        started, sent = time.monotonic(), 0.0
        for part in self.timeline.parts:
            if isinstance(part, Gate):
                deadline = time.monotonic() + part.limit
                while not part.until(self.timeline.recorder):
                    assert time.monotonic() < deadline, f"the pipeline never reached {part}"
                    sent += 0.02
                    await asyncio.sleep(max(0.0, started + sent - time.monotonic()))
                    yield AudioChunk(silence(0.02))
                part.then(self.app)
                continue
            pcm = silence(part) if isinstance(part, float | int) else piper(part)
            for offset in range(0, len(pcm), step):
                chunk = AudioChunk(pcm[offset : offset + step])
                sent += chunk.seconds
                await asyncio.sleep(max(0.0, started + sent - time.monotonic()))
                yield chunk


def story(events: EventRecorder) -> list[str]:
    """What happened, for a failure's message: each event's run, type and key data."""
    keys = ("state", "reason", "text", "barge_in", "muted")
    return [
        f"{(e.run_id or '-')[:4]} {e.type} {[e.data[k] for k in keys if k in e.data]}"
        for e in events.events
        if e.type not in ("tts-audio", "stage-loaded")
    ]


def speaking(events: EventRecorder) -> bool:
    return "speaking" in [e.data["state"] for e in events.of("state")]


def config(tmp_path: Path, audio: Path, realtime: bool = False, **sections: Any) -> dict:
    base = {
        "pipeline": {"wake": ["openwakeword"], "sink": ["wav"]},
        "stages": {
            "source": {"file": {"path": str(audio), "realtime": realtime}},
            "wake": {"openwakeword": {"models": ["hey_jarvis"]}},
            "sink": {"wav": {"path": str(tmp_path / "{run_id}.wav"), "realtime": realtime}},
        },
    }
    return overrides(**deep_merge(base, sections))


async def converse(
    settings_overrides: dict[str, Any],
    gated: GatedTimeline | None = None,
) -> tuple[Pipeline, EventRecorder]:
    """Run the pipeline until its timeline is played and every answer is done."""
    recorder = gated.recorder if gated else EventRecorder()
    empty = Path(__file__).parent / "empty.toml"
    plugins: list[tuple[str, Any]] = [("recorder", recorder)]
    if gated is not None:
        plugins.append(("gated", gated))
        settings_overrides = deep_merge(settings_overrides, {"pipeline": {"source": ["gated"]}})
    settings, host = prepare(empty, settings_overrides, plugins)
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    try:
        await asyncio.wait_for(pipeline.run(), 300)
    finally:
        await pipeline.stop()
    return pipeline, recorder


def intents(events: EventRecorder) -> list[str]:
    return [e.data["name"] for e in events.of("intent")]


def run_end(events: EventRecorder, run_id: str) -> str:
    return next(e.data["reason"] for e in events.of("run-end") if e.run_id == run_id)


def seconds_of(path: Path) -> float:
    with wave.open(str(path)) as wav:
        return wav.getnframes() / wav.getframerate()


async def test_a_wake_phrase_then_a_command_gives_one_run_with_its_intent(tmp_path):
    audio = timeline(tmp_path / "in.wav", 0.5, WAKE, 0.4, "what time is it", 2.0)
    _, events = await converse(config(tmp_path, audio))
    [run] = events.runs()
    [wake] = events.of("wake")
    assert wake.run_id == run and wake.data["name"] == "hey_jarvis"
    assert wake.data["score"] >= 0.5
    assert intents(events) == ["HassGetCurrentTime"]
    assert run_end(events, run) == "done"
    order = [t for t in events.types(run) if t in ("run-start", "wake", "vad-start", "intent")]
    assert order == ["run-start", "wake", "vad-start", "intent"]


async def test_speech_without_the_wake_word_starts_no_run(tmp_path):
    audio = timeline(
        tmp_path / "in.wav", 0.5, "turn on the kitchen light", 1.5, "what time is it", 1.5
    )
    _, events = await converse(config(tmp_path, audio))
    assert events.runs() == []
    assert events.of("transcript") == [] and events.of("wake") == []


async def test_without_a_wake_word_configured_speech_alone_starts_a_run(tmp_path):
    audio = timeline(tmp_path / "in.wav", 0.5, "what time is it", 1.5)
    _, events = await converse(config(tmp_path, audio, pipeline={"wake": []}))
    assert len(events.runs()) == 1
    assert intents(events) == ["HassGetCurrentTime"]


async def test_a_wake_word_and_then_silence_ends_the_run_after_the_timeout(tmp_path):
    audio = timeline(tmp_path / "in.wav", 0.5, WAKE, 4.0)
    _, events = await converse(config(tmp_path, audio, conversation={"wake_timeout": 2.0}))
    [run] = events.runs()
    assert run_end(events, run) == "no-speech-timeout"
    assert events.of("vad-start") == []


async def test_a_wake_word_during_the_answer_stops_playback_and_starts_a_new_run(tmp_path):
    gated = GatedTimeline(
        0.5,
        WAKE,
        0.3,
        "open the pod bay doors",
        Gate(until=speaking),  # the long "not understood" answer (~15 s) is playing
        1.0,
        WAKE,
        0.3,
        "what time is it",
        3.0,
    )
    settings = config(
        tmp_path, tmp_path / "unused.wav", realtime=True, pipeline={"not_understood": LONG_ANSWER}
    )
    _, events = await converse(settings, gated=gated)
    first, second = events.runs()
    assert run_end(events, first) == "cancelled", story(events)
    assert "playback-end" not in events.types(first)  # the answer was cut, not finished
    assert seconds_of(tmp_path / f"{first[:8]}.wav") < 10.0  # of a ~15 s answer
    barge_in = [e for e in events.of("wake") if e.run_id == second]
    assert barge_in and barge_in[0].data["barge_in"] is True
    assert intents(events) == ["HassGetCurrentTime"]
    assert run_end(events, second) == "done"


@pytest.mark.parametrize(("follow_up", "runs"), [("question", 2), ("off", 1)])
async def test_an_answer_asking_a_question_listens_again_without_the_wake_word(
    tmp_path, follow_up, runs
):
    gated = GatedTimeline(
        0.5,
        WAKE,
        0.3,
        "open the pod bay doors",
        Gate(until=lambda events: bool(events.of("playback-end"))),  # the question was asked
        1.0,
        "what time is it",
        3.0,
    )
    settings = config(
        tmp_path,
        tmp_path / "unused.wav",
        realtime=True,
        pipeline={"not_understood": QUESTION},
        conversation={"follow_up": follow_up},
    )
    _, events = await converse(settings, gated=gated)
    assert len(events.runs()) == runs, story(events)
    if follow_up == "question":
        starts = [e.data["reason"] for e in events.of("run-start")]
        assert starts == ["wake", "follow-up"]
        assert intents(events) == ["HassGetCurrentTime"]
    else:
        assert events.of("wake")[0].run_id == events.runs()[0]
        assert intents(events) == []


async def test_muting_stops_listening_and_unmuting_resumes_it(tmp_path):
    gated = GatedTimeline(
        0.5,
        WAKE,
        0.3,
        "what time is it",  # heard
        Gate(until=lambda events: bool(events.of("run-end")), then=lambda p: p.set_muted(True)),
        1.0,
        WAKE,
        0.3,
        "turn on the kitchen light",  # muted
        2.0,
        Gate(then=lambda p: p.set_muted(False)),
        1.0,
        WAKE,
        0.3,
        "what time is it",
        3.0,  # heard again
    )
    settings = config(tmp_path, tmp_path / "unused.wav", realtime=True)
    _, events = await converse(settings, gated=gated)
    assert [e.data["muted"] for e in events.of("muted")] == [True, False]
    assert len(events.runs()) == 2, story(events)
    assert intents(events) == ["HassGetCurrentTime", "HassGetCurrentTime"]
    assert not any("kitchen" in e.data["text"].lower() for e in events.of("transcript"))


async def test_muted_in_the_config_hears_nothing_and_says_so(tmp_path):
    audio = timeline(tmp_path / "in.wav", 0.5, WAKE, 0.4, "what time is it", 2.0)
    _, events = await converse(config(tmp_path, audio, conversation={"muted": True}))
    [muted] = events.of("muted")
    assert muted.data == {"muted": True, "reason": "config"}
    assert events.runs() == [] and events.of("wake") == []
