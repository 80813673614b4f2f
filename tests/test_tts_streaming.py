"""A spoken answer streams sentence by sentence: audio starts before the whole text is made.

Real parts throughout: the bundled Piper voice, the core responder and the WAV sink. The engine
is a PiperTts that also notes when each sentence's synthesis starts and ends.
"""

from __future__ import annotations

import asyncio
import time
import wave
from pathlib import Path

import pytest
from voiced_plugins.io_wav import WavSink, WavSinkOptions
from voiced_plugins.tts_piper import PiperOptions, PiperTts

from voiced.chain import EngineChain
from voiced.context import RunContext
from voiced.events import Event, EventType
from voiced.responder import speak
from voiced.sentences import split_sentences

ANSWER = (
    "The kitchen lights are on. The living room is at twenty one degrees. The front door is locked."
)


class TimedPiper(PiperTts):
    """The real piper engine, noting (text, start, end) of every synthesis."""

    def __init__(self, options: PiperOptions) -> None:
        super().__init__(options)
        self.calls: list[tuple[str, float, float]] = []

    def synthesize(self, text: str):
        started = time.monotonic()
        chunk = super().synthesize(text)
        self.calls.append((text, started, time.monotonic()))
        return chunk


class TimedWavSink(WavSink):
    """The real WAV sink, noting when each chunk arrives."""

    def __init__(self, options: WavSinkOptions) -> None:
        super().__init__(options)
        self.arrivals: list[float] = []

    async def play(self, audio, run_id: str, site_id: str) -> None:
        async def timed(stream):
            async for chunk in stream:
                self.arrivals.append(time.monotonic())
                yield chunk

        await super().play(timed(audio), run_id, site_id)


@pytest.fixture(scope="module")
def piper() -> TimedPiper:
    return TimedPiper(PiperOptions())


@pytest.fixture(scope="module")
def chain(piper: TimedPiper) -> EngineChain:
    chain = EngineChain("tts", [("piper", piper)], lambda event: None)
    chain.load()
    return chain


async def _speak(text: str, chain: EngineChain, folder: Path) -> tuple[list[Event], TimedWavSink]:
    events: list[Event] = []
    sink = TimedWavSink(WavSinkOptions(path=str(folder)))
    await speak(
        text, RunContext(site_id="kitchen"), chain, [sink], events.append, asyncio.to_thread
    )
    return events, sink


@pytest.mark.slow
async def test_first_audio_is_announced_before_the_last_sentence_is_synthesized(
    chain: EngineChain, piper: TimedPiper, tmp_path: Path
) -> None:
    piper.calls.clear()
    events, _ = await _speak(ANSWER, chain, tmp_path)
    types = [e.type for e in events]
    assert types == [
        EventType.TTS_START,
        EventType.TTS_AUDIO,
        EventType.TTS_END,
        EventType.PLAYBACK_END,
    ]
    first_audio, end = events[1], events[2]
    assert [text for text, _, _ in piper.calls] == split_sentences(ANSWER)
    last_started = piper.calls[-1][1]
    assert first_audio.mono <= last_started < end.mono
    assert first_audio.data["sentence"] == 1
    assert first_audio.data["time_to_first_audio_s"] < end.data["duration_s"]


@pytest.mark.slow
async def test_the_sink_gets_the_first_sentence_while_the_last_is_still_being_made(
    chain: EngineChain, piper: TimedPiper, tmp_path: Path
) -> None:
    piper.calls.clear()
    _, sink = await _speak(ANSWER, chain, tmp_path)
    assert len(sink.arrivals) == 3
    last_finished = piper.calls[-1][2]
    assert sink.arrivals[0] < last_finished


@pytest.mark.slow
async def test_the_streamed_answer_is_written_whole_at_the_voice_rate(
    chain: EngineChain, piper: TimedPiper, tmp_path: Path
) -> None:
    events, sink = await _speak(ANSWER, chain, tmp_path)
    end = next(e for e in events if e.type == EventType.TTS_END)
    assert end.data["sentences"] == 3
    with wave.open(str(sink.written[0])) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (22050, 1, 2)
        seconds = wav.getnframes() / wav.getframerate()
    assert seconds == pytest.approx(end.data["audio_seconds"], abs=0.01)


async def test_an_empty_answer_speaks_nothing_and_emits_nothing(
    chain: EngineChain, piper: TimedPiper, tmp_path: Path
) -> None:
    piper.calls.clear()
    events, sink = await _speak("  ", chain, tmp_path)
    assert events == [] and sink.written == [] and piper.calls == []


@pytest.mark.slow
async def test_a_long_first_sentence_plays_its_first_clause_before_the_rest_is_made(
    chain: EngineChain, piper: TimedPiper, tmp_path: Path
) -> None:
    piper.calls.clear()
    text = "The weather today is sunny and warm, with a light breeze from the west all afternoon."
    events, sink = await _speak(text, chain, tmp_path)
    assert [t for t, _, _ in piper.calls] == [
        "The weather today is sunny and warm,",
        "with a light breeze from the west all afternoon.",
    ]
    first_audio = next(e for e in events if e.type == EventType.TTS_AUDIO)
    assert first_audio.mono <= piper.calls[1][1]  # announced before the rest was started
    assert sink.arrivals[0] < piper.calls[1][2]  # and at the sink before it was finished
