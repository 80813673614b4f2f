"""whisper-transformers without a GPU: it steps aside for the CPU engine, or runs when alone.

Window buckets (the MIOpen shapes) are checked as the plain rule they are; whether the engine
uses them is checked on the CPU with an explicit bucket list.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from voiced_plugins.asr_whisper.listen.options import RecognitionOptions
from voiced_plugins.asr_whisper.torch_engine import (
    ROCM_WINDOW_BUCKETS,
    WhisperTransformersAsr,
    bucket_window,
    later_engines,
)

from voiced.api.recognition import Decoder
from voiced.config import Settings

ROOT = Path(__file__).parents[1]
SAMPLE = ROOT / "voiced" / "data" / "sample.wav"


def test_fitted_windows_round_up_to_a_few_buckets():
    assert [bucket_window(w, ROCM_WINDOW_BUCKETS) for w in (5, 6, 10, 11, 19, 21, 30)] == [
        5,
        10,
        10,
        15,
        20,
        30,
        30,
    ]
    assert len({bucket_window(w, ROCM_WINDOW_BUCKETS) for w in range(5, 31)}) == 5
    assert bucket_window(7, ()) == 7


def test_the_engine_offers_the_recognizers_decoder_and_takes_its_options():
    engine = WhisperTransformersAsr()
    assert isinstance(engine, Decoder)
    assert isinstance(engine.options, RecognitionOptions)


def test_the_engines_after_this_one_come_from_the_configured_chain():
    class App:
        settings = Settings(pipeline={"asr": ["whisper-transformers", "whisper-ctranslate2"]})

    assert later_engines(App(), "whisper-transformers") == ["whisper-ctranslate2"]
    assert later_engines(App(), "whisper-ctranslate2") == []
    assert later_engines(None, "whisper-transformers") == []


def transcribe(*args: str, cache: Path) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    env["VOICED_CACHE_DIR"] = str(cache)
    config = str(ROOT / "config" / "voiced.toml")
    command = ["--log-level", "INFO", "--config", config, "transcribe", "--json", *args]
    result = subprocess.run(
        [sys.executable, "-m", "voiced.cli", *command, str(SAMPLE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1]), result.stderr


@pytest.mark.slow
def test_on_a_cpu_machine_the_default_chain_hands_asr_to_ctranslate2_with_the_reason(
    tmp_path,
):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: whisper-transformers serves")
    line, log = transcribe(cache=tmp_path)
    assert line["engine"] == "whisper-ctranslate2"
    assert "whisper-transformers not used" in log and "no usable GPU" in log


@pytest.mark.slow
def test_whisper_transformers_alone_runs_on_the_cpu_instead_of_failing(tmp_path):
    pytest.importorskip("transformers")
    line, _ = transcribe("--asr", "whisper-transformers", cache=tmp_path)
    assert line["engine"] == "whisper-transformers"
    assert "kitchen" in line["text"].lower()


@pytest.mark.slow
def test_the_engine_rounds_windows_to_its_buckets_and_warms_each_up(tmp_path):
    pytest.importorskip("transformers")
    from speech import steady_piper
    from voiced_plugins.asr_whisper.torch_engine import (
        WhisperTransformersAsr,
        WhisperTransformersOptions,
    )

    engine = WhisperTransformersAsr(
        WhisperTransformersOptions(cache_dir=str(tmp_path), window_buckets=[10, 30], warmup=False)
    )
    engine.load()
    assert engine.warm_up() == [10, 30]
    transcript = engine.transcribe(steady_piper("Turn on the kitchen lights."))
    assert transcript.data["window_s"] == 10
    assert "kitchen" in transcript.text.lower()
    first = transcript.data["decision"]["steps"][0]  # the encoder and the first decode
    assert first["step"] == "first" and first["ms"] > 0
    # the GPU's feature path (log-mel on the device), taken here on the CPU: same words
    from voiced_plugins.asr_whisper.log_mel import LogMel

    engine._log_mel = LogMel(engine.processor.feature_extractor, "cpu")
    assert engine.transcribe(steady_piper("Turn on the kitchen lights.")).text == transcript.text


@pytest.mark.slow
def test_log_mel_on_the_device_matches_the_whisper_feature_extractor_on_real_speech():
    pytest.importorskip("transformers")
    import numpy as np
    from speech import steady_piper
    from transformers import WhisperFeatureExtractor
    from voiced_plugins.asr_whisper.log_mel import LogMel

    speech = np.frombuffer(steady_piper("What time is it in the kitchen?"), "<i2") / 32768.0
    for window in (5, 10, 30):
        padded = np.zeros(window * 16000, dtype=np.float32)
        padded[: len(speech)] = speech[: len(padded)]
        for mels in (80, 128):  # tiny..large-v2, large-v3
            extractor = WhisperFeatureExtractor(feature_size=mels)
            expected = extractor(
                padded, sampling_rate=16000, padding="longest", return_tensors="np"
            ).input_features[..., : window * 100]
            ours = LogMel(extractor, "cpu")(padded).numpy()
            assert ours.shape == expected.shape == (1, mels, window * 100)
            assert np.abs(ours - expected).max() <= 1e-5
