"""The ``vits-transformers`` TTS engine, on a tiny randomly initialised VITS model.

No VITS checkpoint ships in any package available here (and nothing is downloaded), so these
tests build a small ``VitsConfig`` model with random weights and a character vocabulary in a
temporary folder: they check loading, device and dtype placement, options and the audio's
shape and rate, not how it sounds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tiny_vits import build_random_vits  # noqa: E402
from voiced_plugins.tts_vits import (  # noqa: E402
    ModelNotFoundError,
    TtsInputError,
    VitsOptions,
    VitsTts,
    voiced_register_stages,
)

from voiced.accel import DeviceError  # noqa: E402

RATE = 24000  # not MMS's 16 kHz, so the engine must read the rate from the model


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    return build_random_vits(tmp_path_factory.mktemp("tiny-vits"))


@pytest.fixture(scope="module")
def vits(tiny_model: Path) -> VitsTts:
    tts = VitsTts(VitsOptions(model=str(tiny_model), device="cpu", seed=1))
    tts.load()
    yield tts
    tts.close()


@pytest.mark.slow
def test_tiny_model_loads_on_the_cpu_in_float32(vits: VitsTts) -> None:
    assert (vits.device, vits.dtype) == ("cpu", "float32")
    assert next(vits._model.parameters()).dtype == torch.float32
    assert vits.info["reason"] == "cpu requested"


@pytest.mark.slow
def test_audio_is_16_bit_mono_at_the_model_rate(vits: VitsTts) -> None:
    chunk = vits.synthesize("Turn on the kitchen lights.")
    assert (chunk.format.rate, chunk.format.width, chunk.format.channels) == (RATE, 2, 1)
    samples = chunk.to_array()
    assert samples.dtype == np.float32 and samples.shape == (chunk.samples, 1)
    assert chunk.samples > 0 and np.abs(samples).max() > 0


@pytest.mark.slow
def test_a_fixed_seed_gives_the_same_audio_for_the_same_text(vits: VitsTts) -> None:
    assert vits.synthesize("Hello there.").audio == vits.synthesize("Hello there.").audio


@pytest.mark.slow
def test_a_lower_speaking_rate_gives_longer_audio(tiny_model: Path, vits: VitsTts) -> None:
    slow = VitsTts(VitsOptions(model=str(tiny_model), device="cpu", seed=1, speaking_rate=0.5))
    slow.load()
    text = "The front door is open."
    assert slow.synthesize(text).samples > 1.5 * vits.synthesize(text).samples


@pytest.mark.slow
def test_auto_device_on_this_machine_follows_the_torch_probe(tiny_model: Path) -> None:
    tts = VitsTts(VitsOptions(model=str(tiny_model)))
    tts.load()
    if torch.cuda.is_available():
        assert (tts.device, tts.dtype) == ("cuda:0", "float16")
    else:
        assert (tts.device, tts.dtype) == ("cpu", "float32")
        assert "no usable GPU" in tts.info["reason"]


@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA/ROCm GPU")
def test_on_a_gpu_the_model_runs_in_float16(tiny_model: Path) -> None:
    tts = VitsTts(VitsOptions(model=str(tiny_model), device="cuda"))
    tts.load()
    assert next(tts._model.parameters()).dtype == torch.float16
    assert tts.synthesize("Lights on.").format.rate == RATE


@pytest.mark.slow
def test_half_precision_that_overflows_falls_back_to_float32_and_says_why(
    tiny_model: Path, caplog
) -> None:
    tts = VitsTts(VitsOptions(model=str(tiny_model), device="cpu", seed=1))
    tts.load()
    # the model as a GPU runs it, with a layer whose activations overflow float16 (> 65504)
    tts._model.half()
    tts.dtype = "float16"
    with torch.no_grad():
        tts._model.decoder.conv_pre.weight.mul_(3e4)
    inputs = tts._tokenizer("Turn on the lights.", return_tensors="pt")
    with torch.inference_mode():
        assert not torch.isfinite(tts._model(**inputs).waveform).all()
    with caplog.at_level("WARNING"):
        chunk = tts.synthesize("Turn on the lights.")
    assert tts.dtype == "float32" and next(tts._model.parameters()).dtype == torch.float32
    assert "NaN/inf" in tts.info["upcast"] and "float32 from now on" in caplog.text
    samples = chunk.to_array()
    assert np.isfinite(samples).all() and np.abs(samples).max() > 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_requesting_a_gpu_that_torch_cannot_see_is_an_error(tiny_model: Path) -> None:
    with pytest.raises(DeviceError, match="requested but torch"):
        VitsTts(VitsOptions(model=str(tiny_model), device="rocm")).load()


def test_empty_text_is_a_clear_error(vits: VitsTts) -> None:
    with pytest.raises(TtsInputError, match="text is empty"):
        vits.synthesize(" ")


def test_text_outside_the_vocabulary_is_a_clear_error(vits: VitsTts) -> None:
    with pytest.raises(TtsInputError, match="vocabulary"):
        vits.synthesize("日本語")


@pytest.mark.timeout(60)
def test_a_hub_id_that_is_not_cached_fails_fast_offline() -> None:
    with pytest.raises(ModelNotFoundError, match="not in the Hugging Face cache"):
        VitsTts(VitsOptions(model="facebook/mms-tts-nonexistent-xyz")).load()


def test_a_missing_model_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match=f"{tmp_path / 'nope'} not found"):
        VitsTts(VitsOptions(model=str(tmp_path / "nope"))).load()


@pytest.mark.slow
def test_a_model_directory_without_a_tokenizer_is_named(tmp_path: Path) -> None:
    folder = build_random_vits(tmp_path / "model")
    (folder / "vocab.json").unlink()
    with pytest.raises(ModelNotFoundError, match="no usable tokenizer"):
        VitsTts(VitsOptions(model=str(folder), device="cpu")).load()


def test_plugin_registers_the_vits_tts_stage_with_its_options() -> None:
    registered = []
    voiced_register_stages(lambda *args, **kwargs: registered.append((args, kwargs)))
    (kind, name, factory), kwargs = registered[0]
    assert (kind, name, factory, kwargs["options"]) == (
        "tts",
        "vits-transformers",
        VitsTts,
        VitsOptions,
    )
