"""Rescoring's acceptance on noisy real speech (espeak-ng with pink noise, tiny.en, the repo's
home): a first look that takes a command up to 1.5 nats a token below Whisper's own reading
(candidates scored as written; the default now scores them in their best surface form, up to
2.0: tests/test_asr_surface_forms.py), and the optional second look in the full window after
the prompted retry (``recognition.rescore_full``, 0.8 there). The audio is the tuning set's
(benchmarks/testset.py ``render``, same voice, rate, noise and seed); the slips are what the
model really writes for it (measured, issue 15)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import soundfile
from home_stages import App, loaded
from speech import espeak
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options

from benchmarks import testset
from benchmarks.recognition import pipeline_audio

pytestmark = pytest.mark.slow
PAIRS_SEARCH = {"search_one_template": False, "search_beam": 6}


def noisy(text: str, voice: str, speed: int, rate: int, seed: int) -> bytes:
    """The command as a tuning file has it (10 dB pink noise, a 16-bit file at ``rate``),
    read as the benchmark reads it."""
    variant = testset.Variant(voice, 10.0, rate, 1, 0.3, 0.7, speed)
    frames, _ = testset.render(text, variant, seed=seed)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "speech.wav"
        soundfile.write(str(path), frames, rate, subtype="PCM_16")
        return pipeline_audio(str(path))


@pytest.fixture(scope="module")
def engines(hassil):
    with loaded(
        {
            # the limit on its own: candidates scored as written, as when 1.5 was chosen
            "0.8": WhisperCt2Asr(
                WhisperCt2Options(
                    recognition={"retry": False, "rescore_drop": 0.8, "rescore_forms": False}
                ),
                App(hassil),
            ),
            "1.5": WhisperCt2Asr(
                WhisperCt2Options(
                    recognition={"retry": False, "rescore_drop": 1.5, "rescore_forms": False}
                ),
                App(hassil),
            ),
            # the search over the graph's pairs, 6 readings a step: kept to one template, the
            # default finds the noisy "lock the front door" below in the fitted window already
            "one look": WhisperCt2Asr(WhisperCt2Options(recognition=PAIRS_SEARCH), App(hassil)),
            "two looks": WhisperCt2Asr(
                WhisperCt2Options(recognition={"rescore_full": True, **PAIRS_SEARCH}), App(hassil)
            ),
        }
    ) as made:
        yield made


@pytest.mark.parametrize(
    ("spoken", "speed", "seed", "intent_name", "entities"),
    [  # en-us+m7 at 8 kHz; heard "can build a timer." / "turn on the bedroom and"
        ("cancel the timer", 180, 1046, "HassCancelTimer", []),
        ("turn on the bedroom fan", 150, 1082, "HassTurnOn", ["fan.bedroom"]),
    ],
)
def test_the_first_look_takes_a_noisy_command_a_little_further_below_the_free_reading(
    engines, hassil, spoken, speed, seed, intent_name, entities
):
    audio = noisy(spoken, "en-us+m7", speed, 8000, seed)
    before = engines["0.8"].transcribe(audio)
    assert hassil.recognize(before.text) is None, before.text  # the slip is real
    assert "below what was heard" in before.data["rescored"]["why"]  # found, over 0.8
    transcript = engines["1.5"].transcribe(audio)
    intent = hassil.recognize(transcript.text)
    assert intent is not None, transcript.data
    assert (intent.name, intent.data["entities"]) == (intent_name, entities)
    rescored = transcript.data["rescored"]
    assert 0.8 < rescored["free_score"] - rescored["score"] <= 1.5
    assert rescored["window_s"] < 30


def test_a_second_look_in_the_full_window_hears_what_the_fitted_one_missed(engines, hassil):
    audio = noisy("lock the front door", "en-us+m7", 135, 8000, 1010)  # "Yark, that one's door"
    before = engines["one look"].transcribe(audio)
    assert hassil.recognize(before.text) is None, before.text
    transcript = engines["two looks"].transcribe(audio)
    intent = hassil.recognize(transcript.text)
    assert intent is not None, transcript.data
    assert (intent.name, intent.data["entities"]) == ("HassTurnOn", ["lock.front_door"])
    rescored = transcript.data["rescored"]
    assert rescored["window_s"] == 30 and transcript.text in rescored["constrained"]
    assert rescored["free_score"] - rescored["score"] <= 0.8
    assert transcript.data["hypothesis"]["retried"]


@pytest.mark.parametrize(
    "chatter",
    [
        "the kitchen light flickers when it rains",
        "we need new bulbs for the desk lamp",
        "what a strange weather forecast for the weekend",
        "lock the car when you leave",
    ],
)
def test_chatter_that_names_the_home_stays_chatter_with_one_look_or_two(engines, hassil, chatter):
    for audio in (espeak(chatter, "en-us", 160), noisy(chatter, "en-us+m7", 160, 16000, 7)):
        for looks in ("one look", "two looks"):
            transcript = engines[looks].transcribe(audio)
            assert transcript.text
            assert hassil.recognize(transcript.text) is None, (looks, transcript.text)
            assert "text" not in transcript.data.get("rescored", {}), transcript.data["rescored"]
