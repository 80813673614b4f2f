"""Media plays in the background of a site: the site's own audio is mixed over it while the
media is lowered (ducking), media pauses and resumes, and audio mixed in is never lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import numpy as np
import pytest

from voiced.audio import PIPELINE_FORMAT, AudioChunk, AudioFormat
from voiced.mixer import Mixer

RATE = PIPELINE_FORMAT.rate
MEDIA_LEVEL = 0.5
VOICE_LEVEL = 0.25


class Speaker:
    """A sink that plays at a set speed: what it played, stream by stream."""

    def __init__(self, speed: float = 20.0) -> None:
        self.speed = speed  # times real time
        self.streams: list[np.ndarray] = []

    async def play(self, audio: AsyncIterator[AudioChunk], run_id: str, site_id: str) -> None:
        played: list[np.ndarray] = []
        self.streams.append(np.zeros(0, "f4"))
        async for chunk in audio:
            played.append(chunk.to_array()[:, 0])
            self.streams[-1] = np.concatenate(played)
            await asyncio.sleep(chunk.seconds / self.speed)


def constant(level: float, seconds: float, fmt: AudioFormat = PIPELINE_FORMAT) -> list[AudioChunk]:
    """A flat level (easy to find in a mix), as chunks of 0.5 s."""
    count = int(fmt.rate * seconds)
    pcm = np.full(count, int(level * 32767), "<i2").tobytes()
    step = fmt.rate  # 0.5 s of 16-bit samples
    return [AudioChunk(pcm[i : i + step], fmt) for i in range(0, len(pcm), step)]


async def stream(chunks: list[AudioChunk], gap: float = 0.0) -> AsyncIterator[AudioChunk]:
    for chunk in chunks:
        await asyncio.sleep(gap)
        yield chunk


async def wait_for(condition, seconds: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(seconds / 0.01)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def seconds_at(played: np.ndarray, level: float) -> float:
    return float(np.sum(np.isclose(played, level, atol=0.01))) / RATE


async def test_with_no_media_a_stream_goes_straight_to_the_sink() -> None:
    speaker = Speaker()
    chunks = constant(VOICE_LEVEL, 1.0)
    await Mixer(speaker).play(stream(chunks), "run", "kitchen")  # type: ignore[arg-type]
    assert len(speaker.streams) == 1
    assert seconds_at(speaker.streams[0], VOICE_LEVEL) == pytest.approx(1.0, abs=0.01)


async def test_an_answer_is_mixed_over_the_media_which_is_lowered_meanwhile() -> None:
    speaker, busy = Speaker(), [False]
    mixer = Mixer(speaker)  # type: ignore[arg-type]
    media = asyncio.create_task(
        mixer.play_background(
            stream(constant(MEDIA_LEVEL, 4.0)), "media", "kitchen", lambda: 0.2 if busy[0] else 1.0
        )
    )
    await wait_for(lambda: speaker.streams and speaker.streams[0].size > RATE)
    busy[0] = True
    await mixer.play(stream(constant(VOICE_LEVEL, 1.0)), "answer", "kitchen")
    busy[0] = False
    await media
    assert len(speaker.streams) == 1  # one stream: the answer went into the media's
    played = speaker.streams[0]
    assert played.size == 4 * RATE  # all of the media, none of it lost
    assert seconds_at(played, 0.2 * MEDIA_LEVEL + VOICE_LEVEL) == pytest.approx(1.0, abs=0.3)
    assert seconds_at(played, MEDIA_LEVEL) > 2.0  # full volume before and after
    assert played.min() >= 0.2 * MEDIA_LEVEL - 0.01  # the media never stopped under it


async def test_an_answer_at_another_rate_is_mixed_at_the_medias() -> None:
    speaker = Speaker()
    mixer = Mixer(speaker)  # type: ignore[arg-type]
    media = asyncio.create_task(
        mixer.play_background(stream(constant(MEDIA_LEVEL, 4.0)), "m", "kitchen", lambda: 0.0)
    )
    await wait_for(lambda: speaker.streams)
    piper = AudioFormat(rate=22050, width=2, channels=1)
    await mixer.play(stream(constant(VOICE_LEVEL, 1.0, piper)), "answer", "kitchen")
    await media
    assert seconds_at(speaker.streams[0], VOICE_LEVEL) == pytest.approx(1.0, abs=0.02)


async def test_paused_media_lets_an_answer_play_alone_and_resumes_where_it_stopped() -> None:
    speaker = Speaker()
    mixer = Mixer(speaker)  # type: ignore[arg-type]
    assert mixer.pause(True) is False  # nothing to pause yet
    media = asyncio.create_task(
        mixer.play_background(stream(constant(MEDIA_LEVEL, 3.0)), "m", "kitchen", lambda: 1.0)
    )
    await wait_for(lambda: speaker.streams and speaker.streams[0].size >= RATE)
    assert mixer.pause(True) is True
    await mixer.play(stream(constant(VOICE_LEVEL, 1.0)), "answer", "kitchen")
    await asyncio.sleep(0.3)
    held = speaker.streams[0].size
    await asyncio.sleep(0.3)
    assert speaker.streams[0].size == held  # paused, nothing to play: the stream waits
    assert not media.done()
    mixer.pause(False)
    await media
    played = speaker.streams[0]
    assert seconds_at(played, VOICE_LEVEL) == pytest.approx(1.0, abs=0.01)  # alone
    assert seconds_at(played, MEDIA_LEVEL) == pytest.approx(3.0, abs=0.01)  # all of it


async def test_an_answer_still_playing_when_the_media_is_stopped_plays_to_its_end() -> None:
    speaker = Speaker(speed=2.0)
    mixer = Mixer(speaker)  # type: ignore[arg-type]
    media = asyncio.create_task(
        mixer.play_background(stream(constant(MEDIA_LEVEL, 8.0)), "m", "kitchen", lambda: 0.0)
    )
    await wait_for(lambda: speaker.streams)
    answer = asyncio.create_task(mixer.play(stream(constant(VOICE_LEVEL, 3.0)), "a", "kitchen"))
    await wait_for(lambda: seconds_at(speaker.streams[0], VOICE_LEVEL) > 0.5)
    media.cancel()
    await answer
    voice = sum(seconds_at(played, VOICE_LEVEL) for played in speaker.streams)
    assert len(speaker.streams) == 2 and voice == pytest.approx(3.0, abs=0.05)


async def test_an_answer_longer_than_the_media_is_played_to_its_end_in_its_stream() -> None:
    speaker = Speaker()
    mixer = Mixer(speaker)  # type: ignore[arg-type]
    media = asyncio.create_task(
        mixer.play_background(stream(constant(MEDIA_LEVEL, 1.0)), "m", "kitchen", lambda: 0.0)
    )
    await wait_for(lambda: speaker.streams)
    await mixer.play(stream(constant(VOICE_LEVEL, 3.0), gap=0.05), "answer", "kitchen")
    await media
    assert len(speaker.streams) == 1
    assert seconds_at(speaker.streams[0], VOICE_LEVEL) == pytest.approx(3.0, abs=0.05)


async def test_a_cancelled_answer_leaves_the_media_playing() -> None:
    speaker = Speaker(speed=4.0)
    mixer = Mixer(speaker)  # type: ignore[arg-type]
    media = asyncio.create_task(
        mixer.play_background(stream(constant(MEDIA_LEVEL, 3.0)), "m", "kitchen", lambda: 1.0)
    )
    await wait_for(lambda: speaker.streams)
    answer = asyncio.create_task(mixer.play(stream(constant(VOICE_LEVEL, 2.0)), "a", "kitchen"))
    await asyncio.sleep(0.2)
    answer.cancel()
    await media
    assert speaker.streams[0].size == 3 * RATE
    assert mixer.bed is None


async def test_one_media_at_a_time_on_a_sink() -> None:
    mixer = Mixer(Speaker(speed=1.0))  # type: ignore[arg-type]
    first = asyncio.create_task(
        mixer.play_background(stream(constant(MEDIA_LEVEL, 2.0)), "m", "kitchen", lambda: 1.0)
    )
    await asyncio.sleep(0.1)
    with pytest.raises(RuntimeError, match="already playing"):
        await mixer.play_background(stream(constant(0.1, 1.0)), "m2", "kitchen", lambda: 1.0)
    first.cancel()
