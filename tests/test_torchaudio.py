"""torchaudio's part in the torch Whisper engine: resampling and BS.1770 loudness levelling.

torchaudio's numbers are computed in a child process that has torch + torchaudio from the
cache of ``torch_sites`` (the `gpu` extra's floor of torch with its torchaudio, run on the CPU;
the venv's CPU torch cannot load the index's CUDA torchaudio) and checked here against
independent references: the exact band-limited signal, soxr, the standard's own reference
level and pyloudnorm. Without torchaudio (the venv) the engine resamples with soxr and says why.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soxr
from torch_sites import child_env, floors, floors_site
from voiced_plugins.asr_whisper.device_audio import (
    SoxrAudio,
    device_audio,
    torchaudio_reason,
)

ROOT = Path(__file__).parents[1]
RATES = (8000, 22050, 44100, 48000)
EDGE = 800  # 50 ms at each end, where a resampler sees the signal start from nothing


def tones(source_rate: int, at_rate: int | None = None, seconds: float = 2.0) -> np.ndarray:
    """A band-limited test signal made for ``source_rate`` (tones below its and 16 kHz's
    Nyquist frequencies), sampled exactly at ``at_rate`` (default: the source rate)."""
    top = 0.9 * min(source_rate, 16000) / 2
    rate = at_rate or source_rate
    t = np.arange(int(rate * seconds)) / rate
    freqs = [f for f in (110, 440, 1000, 2500, 3500, 5000, 7000) if f < top]
    return sum(0.1 * np.sin(2 * np.pi * f * t + i) for i, f in enumerate(freqs))


def sine_997(rate: int, amplitude: float, seconds: float = 5.0) -> np.ndarray:
    return amplitude * np.sin(2 * np.pi * 997 * np.arange(int(rate * seconds)) / rate)


def piper_native(text: str) -> tuple[np.ndarray, int]:
    """Piper's own output (22.05 kHz float), without sampling noise, with 0.2 s around it."""
    from piper import SynthesisConfig
    from speech import _piper_voice

    config = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    chunks = list(_piper_voice().synthesize(text, syn_config=config))
    rate = chunks[0].sample_rate
    pad = np.zeros(int(0.2 * rate), dtype=np.float32)
    return np.concatenate([pad, *(c.audio_float_array for c in chunks), pad]), rate


CHILD = r"""
import json, sys
from pathlib import Path
import numpy as np
import torch, torchaudio
from voiced_plugins.asr_whisper.device_audio import TorchaudioAudio

work = Path(sys.argv[1])
job = json.loads((work / "job.json").read_text())
audio = TorchaudioAudio("cpu")
out = {"torch": torch.__version__, "torchaudio": torchaudio.__version__, "loudness": {}}
for name, rate in job["resample"].items():
    x = np.load(work / f"{name}.npy")
    np.save(work / f"{name}.16k.npy", audio.to_target(x, rate).numpy())
for name, rate in job["loudness"].items():
    out["loudness"][name] = audio.loudness(torch.from_numpy(np.load(work / f"{name}.npy")), rate)
short = torch.full((3000,), 0.01)  # under one 400 ms gating block
levelled, gain = audio.level(short, -23.0, 30.0)
out["short"] = {"gain_db": gain, "unchanged": bool(torch.equal(levelled, short))}
for name, (target, max_gain) in job["level"].items():
    levelled, gain = audio.level(torch.from_numpy(np.load(work / f"{name}.npy")), target, max_gain)
    np.save(work / f"{name}.levelled.npy", levelled.numpy())
    out[f"{name}.gain_db"] = gain
if job.get("engine"):
    from voiced_plugins.asr_whisper.torch_engine import (
        WhisperTransformersAsr, WhisperTransformersOptions)
    asr = WhisperTransformersAsr(WhisperTransformersOptions(
        cache_dir=str(work / "models"), torchaudio="on", level_lufs=-23.0))
    asr.load()
    samples = np.load(work / "quiet_speech.npy")
    transcript = asr.transcribe_samples(samples, job["engine"])
    out["engine"] = {"text": transcript.text, "audio": transcript.data.get("audio")}
print(json.dumps(out))
"""


def run_child(work: Path, job: dict) -> dict:
    (work / "job.json").write_text(json.dumps(job))
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(work)],
        capture_output=True,
        text=True,
        env=child_env(floors_site()),
        cwd=ROOT,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> tuple[Path, dict]:
    """One child run: every resampling, loudness and levelling case, and the engine."""
    import pyloudnorm

    work = tmp_path_factory.mktemp("torchaudio")
    job: dict = {"resample": {}, "loudness": {}, "level": {}}
    for rate in RATES:
        np.save(work / f"tones_{rate}.npy", tones(rate).astype(np.float32))
        job["resample"][f"tones_{rate}"] = rate
    for rate in (48000, 16000):
        for amplitude in (1.0, 0.1):
            name = f"sine_{rate}_{amplitude}"
            np.save(work / f"{name}.npy", sine_997(rate, amplitude).astype(np.float32))
            job["loudness"][name] = rate
    np.save(work / "silence.npy", np.zeros(16000, dtype=np.float32))
    job["loudness"]["silence"] = 16000
    speech, rate = piper_native("Turn on the kitchen lights.")
    speech16 = soxr.resample(speech, rate, 16000).astype(np.float32)
    np.save(work / "speech.npy", speech16)
    job["loudness"]["speech"] = 16000
    # a far-away satellite: the same speech ~28 dB down
    quiet16 = (speech16 * 10 ** (-28 / 20)).astype(np.float32)
    np.save(work / "quiet.npy", quiet16)
    job["level"]["quiet"] = (-23.0, 40.0)
    job["level"]["quiet_capped"] = (-23.0, 6.0)
    np.save(work / "quiet_capped.npy", quiet16)
    np.save(work / "quiet_speech.npy", (speech * 10 ** (-28 / 20)).astype(np.float32))
    job["engine"] = rate
    out = run_child(work, job)
    out["pyloudnorm_speech"] = pyloudnorm.Meter(16000).integrated_loudness(speech16)
    out["pyloudnorm_quiet"] = pyloudnorm.Meter(16000).integrated_loudness(quiet16)
    return work, out


# -- without torchaudio (the venv) ---------------------------------------------------------


def test_without_torchaudio_the_engine_resamples_with_soxr_and_says_why():
    reason = torchaudio_reason()
    if reason is None:
        pytest.skip("torchaudio loads in this venv: the child tests cover it")
    audio, why = device_audio("cuda:0", "auto")
    assert isinstance(audio, SoxrAudio) and not audio.levels
    assert why == reason and "torchaudio does not load" in why
    with pytest.raises(RuntimeError, match="torchaudio = on, but torchaudio does not load"):
        device_audio("cpu", "on")


def test_torchaudio_off_is_soxr_and_on_the_cpu_auto_keeps_soxr():
    assert isinstance(device_audio("cuda:0", "off")[0], SoxrAudio)
    audio, why = device_audio("cpu", "auto")
    assert isinstance(audio, SoxrAudio)
    assert why  # the reason is logged at load


def test_soxr_resampling_gives_the_band_limited_signal_at_16_khz():
    for rate in RATES:
        out = SoxrAudio().to_target(tones(rate).astype(np.float32), rate)
        truth = tones(rate, 16000)[: len(out)]
        assert np.abs(out - truth)[EDGE:-EDGE].max() < 2e-4, rate


@pytest.mark.slow
def test_the_engine_takes_audio_at_its_own_rate_without_torchaudio(tmp_path):
    pytest.importorskip("transformers")
    from voiced_plugins.asr_whisper.torch_engine import (
        WhisperTransformersAsr,
        WhisperTransformersOptions,
    )

    asr = WhisperTransformersAsr(
        WhisperTransformersOptions(cache_dir=str(tmp_path), level_lufs=-23.0)
    )
    asr.load()
    speech, rate = piper_native("Turn on the kitchen lights.")
    transcript = asr.transcribe_samples(speech, rate)
    assert "kitchen lights" in transcript.text.lower(), transcript
    assert transcript.data["audio"] == {"rate": rate, "resampler": "soxr"}  # no levelling
    with pytest.raises(ValueError, match="unusable sample rate"):
        asr.transcribe_samples(speech, 0)


# -- with torchaudio (the child) -----------------------------------------------------------

slow = pytest.mark.slow


@slow
def test_the_child_runs_the_floor_torch_with_its_torchaudio(measured):
    _, out = measured
    assert out["torch"].split("+")[0] == floors()["torch"]
    assert out["torchaudio"].split("+")[0] == floors()["torchaudio"]


@slow
@pytest.mark.parametrize("rate", RATES)
def test_torchaudio_resamples_to_the_exact_band_limited_signal(measured, rate):
    work, _ = measured
    out = np.load(work / f"tones_{rate}.16k.npy")
    assert len(out) == 32000
    truth = tones(rate, 16000)
    # measured: <= 5e-6 from the truth (a 64-tap Kaiser sinc); soxr is <= 7.1e-5 from it
    assert np.abs(out - truth)[EDGE:-EDGE].max() < 2e-5
    reference = soxr.resample(tones(rate).astype(np.float32), rate, 16000)
    assert np.abs(out - reference)[EDGE:-EDGE].max() < 2e-4


@slow
@pytest.mark.parametrize("rate", (48000, 16000))
def test_a_997_hz_sine_reads_the_standards_level(measured, rate):
    # BS.1770-4: a 0 dBFS 997 Hz sine in one channel reads -3.01 LKFS; -20 dB reads -23.01.
    # torchaudio's own loudness() clamps near full scale and reads -3.28: corrected here.
    _, out = measured
    for amplitude, expected in ((1.0, -3.01), (0.1, -23.01)):
        value = out["loudness"][f"sine_{rate}_{amplitude}"]
        assert value == pytest.approx(expected, abs=0.1), (amplitude, value)


@slow
def test_speech_loudness_agrees_with_pyloudnorm(measured):
    _, out = measured
    assert out["loudness"]["speech"] == pytest.approx(out["pyloudnorm_speech"], abs=0.05)


@slow
def test_a_quiet_satellite_is_levelled_to_the_target(measured):
    import pyloudnorm

    work, out = measured
    levelled = np.load(work / "quiet.levelled.npy")
    assert out["quiet.gain_db"] == pytest.approx(-23.0 - out["pyloudnorm_quiet"], abs=0.1)
    assert pyloudnorm.Meter(16000).integrated_loudness(levelled) == pytest.approx(-23.0, abs=0.1)
    assert np.abs(levelled).max() <= 1.0


@slow
def test_the_gain_stops_at_max_gain_db(measured):
    work, out = measured
    assert out["quiet_capped.gain_db"] == pytest.approx(6.0)
    ratio = (
        np.abs(np.load(work / "quiet_capped.levelled.npy")).max()
        / np.abs(np.load(work / "quiet_capped.npy")).max()
    )
    assert 20 * math.log10(ratio) == pytest.approx(6.0, abs=1e-3)


@slow
def test_the_engine_hears_a_quiet_satellite_at_22_khz_through_torchaudio(measured):
    _, out = measured
    engine = out["engine"]
    assert "kitchen lights" in engine["text"].lower(), engine
    assert engine["audio"]["resampler"] == "torchaudio" and engine["audio"]["rate"] == 22050
    assert engine["audio"]["gain_db"] > 20


@slow
def test_silent_or_too_short_audio_has_no_loudness_and_is_left_alone(measured):
    _, out = measured
    assert out["loudness"]["silence"] == -math.inf
    assert out["short"] == {"gain_db": 0.0, "unchanged": True}
