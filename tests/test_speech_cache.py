"""Short answers are synthesized once per voice (real Piper through the daemon's say)."""

from __future__ import annotations

import pytest
from pipeline_helpers import EventRecorder, no_config_file, overrides

from voiced.audio import AudioChunk
from voiced.daemon import prepare
from voiced.pipeline import Pipeline
from voiced.speech_cache import SpeechCache

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
