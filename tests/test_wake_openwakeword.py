"""The openwakeword wake stage on real speech (the bundled Piper voice)."""

from __future__ import annotations

import shutil

import pytest
from pydantic import ValidationError
from speech import silence
from speech import steady_piper as piper  # noise-free: the same audio, the same scores
from voiced_plugins.wake_openwakeword import (
    BUNDLED,
    OpenWakeWord,
    OpenWakeWordOptions,
    resolve_model,
    threshold_for,
)

from voiced.audio import AudioChunk
from voiced.stages import WAKE_SENSITIVITIES

PHRASES = {
    "okay_nabu": "okay nabu",
    "hey_jarvis": "hey jarvis",
    "alexa": "alexa",
    "hey_mycroft": "hey mycroft",
    "hey_rhasspy": "hey rhasspy",
}


def detections(stage: OpenWakeWord, audio: bytes, chunk_ms: int = 20) -> list[tuple[float, str]]:
    """(seconds into the audio, wake word) for each detection, resetting as a site does."""
    step = 32 * chunk_ms
    found = []
    for offset in range(0, len(audio), step):
        detection = stage.process(AudioChunk(audio[offset : offset + step]))
        if detection is not None:
            found.append((round((offset + step) / 32000, 2), detection.name))
            stage.reset()
    return found


@pytest.fixture(scope="module")
def every_word() -> OpenWakeWord:
    stage = OpenWakeWord(OpenWakeWordOptions(models=list(BUNDLED)))
    stage.load()
    yield stage
    stage.close()


@pytest.mark.parametrize("name", BUNDLED)
def test_each_bundled_wake_word_is_heard_and_named(every_word, name):
    found = detections(every_word, silence(0.5) + piper(PHRASES[name]) + silence(1.0))
    assert [word for _, word in found] == [name]


def test_a_command_without_a_wake_word_is_not_a_detection(every_word):
    audio = silence(0.5) + piper("what time is it in the kitchen") + silence(1.0)
    assert detections(every_word, audio) == []


def test_several_wake_words_at_once_each_report_their_own_name():
    stage = OpenWakeWord(OpenWakeWordOptions(models=["hey_jarvis", "okay_nabu"]))
    stage.load()
    audio = silence(0.5) + piper("okay nabu") + silence(1.5) + piper("hey jarvis") + silence(1.0)
    found = detections(stage, audio)
    assert [word for _, word in found] == ["okay_nabu", "hey_jarvis"]
    assert found[0][0] < found[1][0]


def test_the_chunk_size_does_not_change_what_is_heard():
    audio = silence(0.5) + piper("hey jarvis") + silence(1.0)
    results = []
    for chunk_ms in (10, 20, 80, 500):
        stage = OpenWakeWord(OpenWakeWordOptions(models=["hey_jarvis"]))
        stage.load()
        results.append([word for _, word in detections(stage, audio, chunk_ms)])
    assert results == [["hey_jarvis"]] * 4


def test_the_refractory_period_silences_a_repeat_of_the_same_word():
    audio = silence(0.5) + piper("hey jarvis") + silence(0.4) + piper("hey jarvis") + silence(1)

    def heard(refractory: float) -> int:
        stage = OpenWakeWord(
            OpenWakeWordOptions(models=["hey_jarvis"], refractory_seconds=refractory)
        )
        stage.load()
        return len(detections(stage, audio))

    assert heard(0.0) == 2
    assert heard(5.0) == 1


def test_each_sensitivity_moves_the_configured_threshold_halfway_or_keeps_it():
    assert [threshold_for(0.5, level) for level in WAKE_SENSITIVITIES] == [0.75, 0.5, 0.25]
    assert [threshold_for(0.8, level) for level in WAKE_SENSITIVITIES] == [0.9, 0.8, 0.4]
    with pytest.raises(ValueError, match="one of slightly, moderately, very"):
        threshold_for(0.5, "extremely")


def test_the_sensitivity_decides_which_near_misses_wake():
    """Each phrase heard by a fresh stage, after 0.5 s of silence (a near miss's score depends
    on what came before): okay_nabu's scores are "okay nabu" 0.97, "okay no boo" 0.70,
    "okay nabooru" 0.35, "what time is it" 0.00; the thresholds 0.75 / 0.5 / 0.25."""
    phrases = ("okay nabu", "okay no boo", "okay nabooru", "what time is it")
    said = {phrase: silence(0.5) + piper(phrase) + silence(1.0) for phrase in phrases}

    def wakes(level: str, audio: bytes) -> bool:
        stage = OpenWakeWord(OpenWakeWordOptions(models=["okay_nabu"]))
        stage.load()
        stage.set_sensitivity(level)
        return bool(detections(stage, audio))

    heard = {level: [p for p in phrases if wakes(level, said[p])] for level in WAKE_SENSITIVITIES}
    assert heard == {
        "slightly": ["okay nabu"],
        "moderately": ["okay nabu", "okay no boo"],
        "very": ["okay nabu", "okay no boo", "okay nabooru"],
    }


def test_a_custom_model_file_is_named_after_the_file(tmp_path):
    custom = tmp_path / "computer_please.tflite"
    shutil.copy(resolve_model("hey_jarvis"), custom)
    stage = OpenWakeWord(OpenWakeWordOptions(models=[str(custom)]))
    stage.load()
    found = detections(stage, silence(0.5) + piper("hey jarvis") + silence(1.0))
    assert [word for _, word in found] == ["computer_please"]


def test_an_unknown_wake_word_is_a_clear_options_error():
    with pytest.raises(ValidationError, match=r"neither a bundled model .*okay_nabu.*hey_jarvis"):
        OpenWakeWordOptions(models=["hey_computer"])


def test_the_command_line_shorthand_takes_a_comma_separated_list():
    assert OpenWakeWordOptions.model_validate({"models": "alexa, hey_jarvis"}).models == [
        "alexa",
        "hey_jarvis",
    ]
