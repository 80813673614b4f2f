"""`voiced models convert-ct2`: CTranslate2 Whisper -> transformers, checked against CTranslate2."""

from __future__ import annotations

import argparse
import re

import numpy as np
import pytest
from speech import steady_piper
from voiced_plugins.asr_whisper import convert_ct2_to_transformers, voiced_register_commands
from voiced_plugins.asr_whisper.convert import ConversionError, read_ct2_model
from voiced_plugins.asr_whisper.models import bundled_ct2_dir

pytestmark = pytest.mark.slow
pytest.importorskip("transformers", reason="converting needs voiced[gpu] (torch, transformers)")


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z' ]", " ", text.lower()).split()


@pytest.fixture(scope="module")
def bundled():
    return bundled_ct2_dir("tiny.en")


@pytest.fixture(scope="module")
def converted(bundled, tmp_path_factory):
    return convert_ct2_to_transformers(bundled, tmp_path_factory.mktemp("tiny-en-hf"))


@pytest.fixture(scope="module")
def command():
    commands = []
    voiced_register_commands(add_command=lambda *args: commands.append(args))
    (found,) = [c for c in commands if c[0] == "models convert-ct2"]
    return found


def test_the_checkpoint_loads_offline_with_transformers(converted, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    model = WhisperForConditionalGeneration.from_pretrained(converted)
    processor = WhisperProcessor.from_pretrained(converted)
    assert (model.config.d_model, model.config.encoder_layers, model.config.vocab_size) == (
        384,
        4,
        51864,
    )
    assert processor.feature_extractor.feature_size == 80
    assert (
        processor.tokenizer.decode(
            processor.tokenizer(" kitchen lights").input_ids, skip_special_tokens=True
        )
        == " kitchen lights"
    )


def test_converting_back_to_ctranslate2_gives_the_same_weights(bundled, converted, tmp_path):
    """The strongest check of the mapping: CTranslate2's own converter undoes ours exactly."""
    from ctranslate2.converters import TransformersConverter

    out = tmp_path / "roundtrip"
    TransformersConverter(str(converted)).convert(str(out), quantization="float16")
    original, roundtrip = read_ct2_model(bundled / "model.bin"), read_ct2_model(out / "model.bin")
    weights = {n for n, v in original.variables.items() if v.ndim >= 1 and v.dtype.kind == "f"}
    assert weights == {
        n for n, v in roundtrip.variables.items() if v.ndim >= 1 and v.dtype.kind == "f"
    }
    for name in sorted(weights):
        np.testing.assert_array_equal(
            original.variables[name], roundtrip.variables[name], err_msg=name
        )


def test_converted_model_transcribes_like_faster_whisper(bundled, converted):
    import torch
    from faster_whisper import WhisperModel
    from transformers import WhisperForConditionalGeneration, WhisperProcessor

    pcm = steady_piper("Turn on the kitchen lights.")
    audio = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
    segments, _ = WhisperModel(str(bundled), device="cpu", compute_type="float32").transcribe(
        audio, beam_size=1, language="en"
    )
    reference = " ".join(s.text for s in segments)
    model = WhisperForConditionalGeneration.from_pretrained(converted, dtype=torch.float32)
    processor = WhisperProcessor.from_pretrained(converted)
    features = processor(audio, sampling_rate=16000, return_tensors="pt").input_features
    ids = model.generate(features)
    text = processor.batch_decode(ids, skip_special_tokens=True)[0]
    assert words(text) == words(reference) == ["turn", "on", "the", "kitchen", "lights"]


def test_cli_converts_the_bundled_model(command, tmp_path, capsys):
    _, _, configure, run = command
    parser = argparse.ArgumentParser()
    configure(parser)
    args = parser.parse_args(["bundled:tiny.en", str(tmp_path / "out")])
    assert run(args) == 0
    assert (tmp_path / "out" / "model.safetensors").is_file()
    assert str(tmp_path / "out") in capsys.readouterr().out


def test_cli_refuses_a_directory_that_is_not_ctranslate2(command, converted, tmp_path, capsys):
    _, _, configure, run = command
    parser = argparse.ArgumentParser()
    configure(parser)
    assert run(parser.parse_args([str(converted), str(tmp_path / "out")])) == 2
    err = capsys.readouterr().err
    assert "not a CTranslate2 model directory" in err and "model.bin" in err
    assert not (tmp_path / "out").exists()


def test_quantized_models_are_refused_with_the_reason(converted, tmp_path):
    from ctranslate2.converters import TransformersConverter

    int8 = tmp_path / "int8"
    TransformersConverter(str(converted)).convert(str(int8), quantization="int8")
    (int8 / "tokenizer.json").write_bytes((converted / "tokenizer.json").read_bytes())
    with pytest.raises(ConversionError, match="quantized"):
        convert_ct2_to_transformers(int8, tmp_path / "out")


def test_a_truncated_model_file_is_a_clear_error(bundled, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (broken / name).write_bytes((bundled / name).read_bytes())
    (broken / "model.bin").write_bytes((bundled / "model.bin").read_bytes()[:100_000])
    with pytest.raises(ConversionError, match="truncated"):
        convert_ct2_to_transformers(broken, tmp_path / "out")
