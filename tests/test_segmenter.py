"""Cutting audio into utterances: HA's defaults (0.3 s speech, 0.7 s silence, 15 s max)."""

from __future__ import annotations

import numpy as np
import pytest
from speech import espeak, silence
from voiced_plugins.vad_webrtc import WebrtcVad, WebrtcVadOptions

from voiced.config import VadConfig
from voiced.segmenter import SpeechEnded, SpeechPaused, SpeechStarted, UtteranceSegmenter


@pytest.fixture
def vad():
    vad = WebrtcVad(WebrtcVadOptions())
    vad.load()
    return vad


class LoudnessVad:
    """A deterministic frame detector for shaping tests: any non-zero sample is speech."""

    frame_samples = 160

    def speech_probability(self, frame: bytes) -> float:
        return 1.0 if np.frombuffer(frame, "<i2").any() else 0.0


def tone(seconds: float) -> bytes:
    t = np.arange(int(seconds * 16000)) / 16000
    return (np.sin(2 * np.pi * 200 * t) * 8000).astype("<i2").tobytes()


def feed_in_chunks(
    segmenter: UtteranceSegmenter, pcm: bytes, chunk: int = 640, pauses: bool = False
):
    """The segmenter's events for ``pcm``; pauses (early-commit hints) only when asked."""
    events = []
    for i in range(0, len(pcm), chunk):
        events += segmenter.feed(pcm[i : i + chunk])
    events += segmenter.flush()
    return events if pauses else [e for e in events if not isinstance(e, SpeechPaused)]


def test_two_commands_separated_by_silence_are_two_utterances(vad):
    audio = (
        silence(0.5)
        + espeak("turn on the kitchen lights")
        + silence(1.2)
        + espeak("what time is it")
        + silence(1.0)
    )
    events = feed_in_chunks(UtteranceSegmenter(vad, VadConfig()), audio)
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["SpeechStarted", "SpeechEnded", "SpeechStarted", "SpeechEnded"]
    assert all(e.reason == "silence" for e in events if isinstance(e, SpeechEnded))


def test_an_utterance_keeps_the_audio_from_just_before_speech_start(vad):
    speech = espeak("hello there")
    events = feed_in_chunks(UtteranceSegmenter(vad, VadConfig()), silence(1) + speech + silence(1))
    ended = next(e for e in events if isinstance(e, SpeechEnded))
    assert ended.seconds >= len(speech) / 32000 * 0.9


def test_silence_and_short_clicks_start_nothing():
    segmenter = UtteranceSegmenter(LoudnessVad(), VadConfig())
    blips = (tone(0.1) + silence(0.5)) * 5
    assert feed_in_chunks(segmenter, silence(2) + blips) == []


def test_speech_ends_after_the_configured_silence():
    config = VadConfig(silence_seconds=0.5)
    events = feed_in_chunks(
        UtteranceSegmenter(LoudnessVad(), config),
        tone(1.0) + silence(0.4) + tone(1.0) + silence(0.6),
    )
    assert [type(e) for e in events] == [SpeechStarted, SpeechEnded]
    assert events[1].reason == "silence"


def test_endless_speech_is_cut_at_the_maximum_command_length():
    config = VadConfig(max_command_seconds=3.0)
    events = feed_in_chunks(UtteranceSegmenter(LoudnessVad(), config), tone(10.0))
    ends = [e for e in events if isinstance(e, SpeechEnded)]
    assert [e.reason for e in ends[:3]] == ["max-length"] * 3
    assert all(e.seconds <= 3.01 + config.pre_roll_seconds for e in ends)


def test_speech_at_end_of_stream_is_flushed():
    segmenter = UtteranceSegmenter(LoudnessVad(), VadConfig())
    events = feed_in_chunks(segmenter, silence(0.2) + tone(1.0))
    assert events[-1].reason == "end-of-stream"


def test_stream_time_counts_audio_not_wall_clock():
    segmenter = UtteranceSegmenter(LoudnessVad(), VadConfig())
    feed_in_chunks(segmenter, silence(2.5))
    assert segmenter.stream_time == pytest.approx(2.5, abs=0.02)


def test_an_utterance_reaches_back_to_the_first_word_across_short_pauses():
    # "turn ... on the kitchen lights": 0.2 s of speech, a short pause, then more speech.
    config = VadConfig(pre_roll_seconds=0.2)
    audio = silence(1.0) + tone(0.2) + silence(0.15) + tone(0.6) + silence(1.0)
    events = feed_in_chunks(UtteranceSegmenter(LoudnessVad(), config), audio)
    ended = next(e for e in events if isinstance(e, SpeechEnded))
    samples = np.frombuffer(ended.audio, "<i2")
    first_sound = int(np.flatnonzero(samples)[0]) / 16000
    assert first_sound == pytest.approx(0.2, abs=0.02)  # the pre-roll, then the first word


# -- early commit: pauses inside an utterance ------------------------------------------------


def test_a_short_pause_inside_an_utterance_is_reported_once_with_the_audio_so_far():
    config = VadConfig(speech_seconds=0.1, speculate_pause=0.1, early_commit_pause=0.25)
    segmenter = UtteranceSegmenter(LoudnessVad(), config)
    events = feed_in_chunks(
        segmenter, tone(0.5) + silence(0.4) + tone(0.5) + silence(1.0), pauses=True
    )
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "SpeechStarted", "SpeechPaused", "SpeechPaused", "SpeechEnded"
    ]  # fmt: skip
    first, second = (e for e in events if isinstance(e, SpeechPaused))
    assert abs(len(first.audio) / 32000 - 0.6) < 0.05  # 0.5 s of speech + 0.1 s of pause
    assert first.pause != second.pause  # speech resumed in between: the first is stale
    (ended,) = (e for e in events if isinstance(e, SpeechEnded))
    assert ended.pause == second.pause  # it ended in the second pause: nothing said after it


def test_early_commit_off_reports_no_pauses():
    config = VadConfig(speech_seconds=0.1, early_commit=False)
    events = feed_in_chunks(
        UtteranceSegmenter(LoudnessVad(), config), tone(0.5) + silence(1.0), pauses=True
    )
    assert [type(e).__name__ for e in events] == ["SpeechStarted", "SpeechEnded"]


def test_commit_ends_the_utterance_now_with_what_was_heard():
    config = VadConfig(speech_seconds=0.1)
    segmenter = UtteranceSegmenter(LoudnessVad(), config)
    events = segmenter.feed(tone(0.5) + silence(0.3))
    paused = next(e for e in events if isinstance(e, SpeechPaused))
    assert segmenter.paused and segmenter.pause == paused.pause
    ended = segmenter.commit()
    assert ended.reason == "early-commit" and abs(ended.seconds - 0.8) < 0.05
    assert not segmenter.in_speech and segmenter.pause != paused.pause
    assert segmenter.feed(silence(1.0)) == []  # the silence that follows ends nothing


def test_a_pause_is_speculated_on_early_but_may_end_the_utterance_only_later():
    config = VadConfig(speech_seconds=0.1, speculate_pause=0.1, early_commit_pause=0.25)
    segmenter = UtteranceSegmenter(LoudnessVad(), config)
    events = segmenter.feed(tone(0.5) + silence(0.15))
    paused = next(e for e in events if isinstance(e, SpeechPaused))
    assert segmenter.pausing and not segmenter.paused  # heard, not yet long enough to commit
    segmenter.feed(silence(0.1))
    assert segmenter.paused and segmenter.pause == paused.pause


def test_speech_after_a_speculated_pause_makes_it_stale_even_before_the_commit_pause():
    config = VadConfig(speech_seconds=0.1, speculate_pause=0.1, early_commit_pause=0.25)
    segmenter = UtteranceSegmenter(LoudnessVad(), config)
    paused = next(
        e for e in segmenter.feed(tone(0.5) + silence(0.15)) if isinstance(e, SpeechPaused)
    )
    segmenter.feed(tone(0.1) + silence(0.3))  # "... and the fan", then a pause again
    assert segmenter.paused and segmenter.pause != paused.pause


def test_the_speculation_never_starts_after_the_commit_pause():
    config = VadConfig(speech_seconds=0.1, speculate_pause=0.5, early_commit_pause=0.25)
    segmenter = UtteranceSegmenter(LoudnessVad(), config)
    events = segmenter.feed(tone(0.5) + silence(0.3))
    paused = next(e for e in events if isinstance(e, SpeechPaused))
    assert abs(len(paused.audio) / 32000 - 0.75) < 0.05  # at the commit pause, 0.25 s


def test_a_pause_taken_late_says_how_much_silence_it_already_holds():
    # A pass on the utterance so far is padded to the silence the endpoint's audio ends with:
    # a pause taken 0.4 s in already holds 0.4 s of it (padding the usual 0.6 s on top would
    # give Whisper a longer clip than the endpoint's, which it may hear differently).
    config = VadConfig(speech_seconds=0.1, speculate_pause=0.1, early_commit_pause=0.25)
    segmenter = UtteranceSegmenter(LoudnessVad(), config)
    events = segmenter.feed(tone(0.5) + silence(0.12))
    first = next(e for e in events if isinstance(e, SpeechPaused))
    segmenter.feed(silence(0.28))
    late = segmenter.snapshot()
    assert abs(first.silence - 0.1) < 0.011 and abs(late.silence - 0.4) < 0.011
    assert late.pause == first.pause
    (ended,) = (e for e in segmenter.feed(silence(0.5)) if isinstance(e, SpeechEnded))
    for pause in (first, late):
        padded = len(pause.audio) / 32000 + segmenter.endpoint_silence - pause.silence
        assert abs(padded - ended.seconds) < 0.011  # what the endpoint's pass hears
