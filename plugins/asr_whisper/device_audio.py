"""Audio work done with torchaudio on the torch engine's device: resampling and loudness.

torchaudio is optional (install it from the same wheel index as torch). Where it is missing
or declined, :class:`SoxrAudio` does the resampling on the CPU with soxr (the core's
resampler) and loudness levelling is unavailable.

Inside the daemon, sources convert to 16 kHz at the edge (VAD and wake need it before the
engine sees the audio), so on-device resampling serves callers that hold whole audio at its
own rate: ``WhisperTransformersAsr.transcribe_samples`` (files, satellites' buffers).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from voiced.api.audio import resample

TARGET_RATE = 16000
# torchaudio's "kaiser_best" settings: a 64-zero-crossing Kaiser-windowed sinc, the same
# quality class as soxr's default (within 1e-3 of it on band-limited audio; tests check it)
KAISER_BEST = {
    "lowpass_filter_width": 64,
    "rolloff": 0.9475937167399596,
    "resampling_method": "sinc_interp_kaiser",
    "beta": 14.769656459379492,
}
GATING_BLOCK_S = 0.4  # BS.1770 measures 400 ms blocks: shorter audio has no loudness
HEADROOM = 0.25  # peak at which the K-weighting filters cannot reach full scale (+4 dB shelf)


def torchaudio_reason() -> str | None:
    """Why torchaudio cannot be used here, or None when it loads."""
    try:
        import torchaudio.functional  # noqa: F401
    except Exception as exc:  # ImportError; OSError for a build that does not fit this torch
        return f"torchaudio does not load ({type(exc).__name__}: {exc})"
    return None


class SoxrAudio:
    """Resampling on the CPU with soxr; no loudness levelling."""

    name = "soxr"
    levels = False

    def to_target(self, samples: np.ndarray, rate: int) -> np.ndarray:
        """Mono float32 at ``rate`` -> float32 at 16 kHz (NumPy, on the host)."""
        return resample(np.asarray(samples, dtype=np.float32), rate, TARGET_RATE)


class TorchaudioAudio:
    """Resampling and BS.1770 loudness levelling with torchaudio on ``device``."""

    name = "torchaudio"
    levels = True

    def __init__(self, device: str) -> None:
        import torch
        import torchaudio

        self._torch = torch
        self._torchaudio = torchaudio
        self.device = device
        self._resamplers: dict[int, Any] = {}  # source rate -> Resample (its kernel, on device)

    def to_target(self, samples: np.ndarray, rate: int) -> Any:
        """Mono float32 at ``rate`` -> a float32 tensor at 16 kHz on the device."""
        torch = self._torch
        waveform = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32))
        waveform = waveform.to(self.device, non_blocking=True)
        if rate == TARGET_RATE:
            return waveform
        resampler = self._resamplers.get(rate)
        if resampler is None:
            resampler = self._torchaudio.transforms.Resample(rate, TARGET_RATE, **KAISER_BEST)
            resampler = self._resamplers[rate] = resampler.to(self.device)
        return resampler(waveform)

    def loudness(self, waveform: Any, rate: int = TARGET_RATE) -> float:
        """Integrated loudness (ITU-R BS.1770-4, gated) in LUFS; -inf when too short/silent.

        torchaudio's K-weighting biquads clamp their output to +-1 (``lfilter(clamp=True)``),
        so near full scale its loudness reads low (a 0 dBFS 997 Hz sine: -3.28 LUFS, where
        the standard says -3.01): loud audio is measured scaled down to a peak of
        ``HEADROOM`` and the scale added back. That moves the -70 LUFS absolute gate up by
        as much for such audio, which only drops blocks 50+ LU below its loudest parts.
        """
        if waveform.shape[-1] < GATING_BLOCK_S * rate:
            return -math.inf
        peak = float(waveform.abs().max())
        if peak == 0.0:
            return -math.inf
        scale = min(1.0, HEADROOM / peak)
        measured = self._torchaudio.functional.loudness((waveform * scale).reshape(1, -1), rate)
        value = float(measured) - 20 * math.log10(scale)
        return value if math.isfinite(value) else -math.inf

    def level(self, waveform: Any, target_lufs: float, max_gain_db: float) -> tuple[Any, float]:
        """Scale to ``target_lufs``: the gain is at most ``max_gain_db`` and never takes the
        peak past full scale. Returns (waveform, gain in dB); 0 dB for unmeasurable audio."""
        measured = self.loudness(waveform)
        if measured == -math.inf:
            return waveform, 0.0
        gain_db = min(target_lufs - measured, max_gain_db)
        peak = float(waveform.abs().max())
        if peak > 0:
            gain_db = min(gain_db, -20 * math.log10(peak))
        return waveform * (10 ** (gain_db / 20)), gain_db


def device_audio(device: str, mode: str) -> tuple[SoxrAudio | TorchaudioAudio, str]:
    """The audio helper for an engine on ``device`` and why. ``mode``: auto (torchaudio on a
    GPU when it loads), on (torchaudio, else an error), off (soxr)."""
    if mode == "off":
        return SoxrAudio(), "torchaudio = off"
    reason = torchaudio_reason()
    if reason is None and (mode == "on" or device != "cpu"):
        return TorchaudioAudio(device), f"torchaudio on {device}"
    if mode == "on":
        raise RuntimeError(f"torchaudio = on, but {reason}")
    return SoxrAudio(), reason or "on the CPU soxr is used (torchaudio = on to use torchaudio)"
