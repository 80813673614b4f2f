"""Both Whisper engines on the CPU with real speech, silence and noise."""

from __future__ import annotations

import re
import time

import pytest
from speech import espeak, noise, silence, steady_piper
from voiced_plugins.asr_whisper import voiced_register_stages
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
from voiced_plugins.asr_whisper.models import ModelError
from voiced_plugins.asr_whisper.torch_engine import (
    WhisperTransformersAsr,
    WhisperTransformersOptions,
)

from voiced.intents import Transcript

pytestmark = pytest.mark.slow


KITCHEN = ["turn", "on", "the", "kitchen", "lights"]


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("voiced-models"))


@pytest.fixture(scope="module")
def ct2():
    engine = WhisperCt2Asr(WhisperCt2Options())
    engine.load()
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def hf(cache_dir):
    pytest.importorskip("transformers", reason="whisper-transformers needs voiced[gpu]")
    engine = WhisperTransformersAsr(WhisperTransformersOptions(cache_dir=cache_dir))
    engine.load()
    yield engine
    engine.close()


@pytest.fixture(scope="module", params=["ct2", "hf"])
def engine(request):
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def kitchen_piper():
    return steady_piper("Turn on the kitchen lights.")


@pytest.fixture(scope="module")
def kitchen_espeak():
    return espeak("turn on the kitchen lights")


def test_engines_are_offered_as_asr_stages():
    offered = {}
    voiced_register_stages(
        register=lambda kind, name, factory, **kw: offered.update({(kind, name): kw["options"]})
    )
    assert set(offered) == {("asr", "whisper-ctranslate2"), ("asr", "whisper-transformers")}
    assert offered[("asr", "whisper-ctranslate2")] is WhisperCt2Options


def test_both_voices_are_transcribed(engine, kitchen_piper, kitchen_espeak):
    for audio in (kitchen_piper, kitchen_espeak):
        transcript = engine.transcribe(audio)
        assert isinstance(transcript, Transcript)
        heard = words(transcript.text)  # tiny.en int8 may slip a word on some CPUs:
        assert len(heard) == len(KITCHEN), transcript.text  # "pearn on the kitchen lights"
        assert sum(a != b for a, b in zip(heard, KITCHEN, strict=True)) <= 1, transcript.text
        assert transcript.text == transcript.text.strip()
        assert transcript.engine == engine.name and not transcript.no_speech
        assert transcript.audio_seconds == pytest.approx(len(audio) / 32000)
        assert transcript.data["device"] == "cpu"
        assert transcript.data["timings_ms"]["total"] > 0


def test_the_full_30_second_window_gives_the_same_words(engine, kitchen_piper):
    options = engine.options.model_copy(update={"window": "full"})
    full = type(engine)(options)
    full.load()
    try:
        transcript = full.transcribe(kitchen_piper)
    finally:
        full.close()
    assert transcript.data["window_s"] == 30
    assert words(transcript.text) == KITCHEN


def test_a_short_command_uses_a_window_sized_to_it(engine, kitchen_piper):
    transcript = engine.transcribe(kitchen_piper)
    assert transcript.data["window_s"] < 30


def test_a_long_command_is_not_cut_or_repeated(engine):
    sentence = (
        "Remind me to call my mother tomorrow evening, and don't forget to buy flowers "
        "on the way home from work."
    )
    transcript = engine.transcribe(steady_piper(sentence))
    assert words(transcript.text) == words(sentence)


@pytest.mark.parametrize(
    "audio",
    [silence(2.0), noise(2.0), noise(3.0, level=0.3, seed=1), noise(2.0, level=0.003, seed=2)],
    ids=["silence", "noise", "loud-noise", "quiet-noise"],
)
def test_silence_and_noise_are_no_speech_not_hallucinated_text(engine, audio):
    transcript = engine.transcribe(audio)
    assert transcript.no_speech
    assert transcript.text == ""


def test_ctranslate2_runs_int8_on_this_cpu(ct2):
    assert (ct2.device, ct2.compute_type) == ("cpu", "int8")


def test_both_engines_agree_on_the_same_audio(ct2, hf):
    for audio in (
        espeak("add milk, eggs and bread to my shopping list"),
        steady_piper("Add milk, eggs and bread to my shopping list."),
    ):
        assert words(ct2.transcribe(audio).text) == words(hf.transcribe(audio).text)


def test_transformers_engine_converted_the_bundled_model_into_its_cache(hf, cache_dir):
    from pathlib import Path

    assert (Path(cache_dir) / "whisper-tiny.en-transformers" / "model.safetensors").is_file()


@pytest.mark.parametrize("engine_class", [WhisperCt2Asr, WhisperTransformersAsr])
def test_a_missing_model_directory_is_a_clear_error(engine_class, tmp_path):
    options = engine_class(None).options.model_copy(update={"model": str(tmp_path / "nope")})
    with pytest.raises(ModelError, match="does not exist"):
        engine_class(options).load()


@pytest.mark.parametrize("engine_class", [WhisperCt2Asr, WhisperTransformersAsr])
def test_a_hub_id_not_in_the_cache_fails_at_once_when_downloads_are_off(
    engine_class, tmp_path, monkeypatch
):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    options = engine_class(None).options.model_copy(
        update={"model": "openai/whisper-nonexistent", "allow_download": False}
    )
    started = time.monotonic()
    with pytest.raises(ModelError, match="openai/whisper-nonexistent"):
        engine_class(options).load()
    assert time.monotonic() - started < 60


def test_a_directory_without_model_bin_is_refused_by_the_ctranslate2_engine(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    options = WhisperCt2Options(model=str(tmp_path))
    with pytest.raises(ModelError, match="not a CTranslate2 Whisper directory"):
        WhisperCt2Asr(options).load()


def test_transcribe_before_load_is_an_error():
    with pytest.raises(RuntimeError, match="before load"):
        WhisperCt2Asr(WhisperCt2Options()).transcribe(silence(1.0))
