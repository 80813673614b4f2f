"""resemblyzer's audio front end in numpy: volume normalization, long-silence trimming
with WebRTC's VAD, and the 40-band mel power spectrogram (as librosa computes it)."""

from __future__ import annotations

import functools

import numpy as np

RATE = 16000
N_FFT = 400  # 25 ms window
HOP = 160  # 10 ms step
N_MELS = 40
TARGET_DBFS = -30.0
VAD_WINDOW = RATE * 30 // 1000  # 30 ms
VAD_AVERAGE_WIDTH = 8
VAD_MAX_SILENCE = 6
INT16_MAX = 2**15 - 1


def pcm_to_float(audio: bytes) -> np.ndarray:
    """16-bit PCM -> float32 in [-1, 1)."""
    return np.frombuffer(audio, dtype="<i2").astype(np.float32) / 32768.0


def normalize_volume(wav: np.ndarray, target_dbfs: float = TARGET_DBFS) -> np.ndarray:
    """Raise quiet audio to ``target_dbfs`` (never lowers it)."""
    rms = float(np.sqrt(np.mean((wav.astype(np.float64) * INT16_MAX) ** 2))) if wav.size else 0.0
    if rms == 0.0:
        return wav
    change = target_dbfs - 20 * np.log10(rms / INT16_MAX)
    return wav if change < 0 else (wav * (10 ** (change / 20))).astype(np.float32)


def _moving_average(flags: np.ndarray, width: int) -> np.ndarray:
    padded = np.concatenate((np.zeros((width - 1) // 2), flags, np.zeros(width // 2)))
    summed = np.cumsum(padded, dtype=float)
    summed[width:] = summed[width:] - summed[:-width]
    return summed[width - 1 :] / width


def trim_long_silences(wav: np.ndarray, vad: object) -> np.ndarray:
    """Keep speech and at most ~``VAD_MAX_SILENCE`` windows of silence around it."""
    wav = wav[: len(wav) - len(wav) % VAD_WINDOW]
    if not len(wav):
        return wav
    pcm = np.clip(np.round(wav * INT16_MAX), -32768, 32767).astype("<i2").tobytes()
    step = VAD_WINDOW * 2
    flags = np.array(
        [vad.is_speech(pcm[i : i + step], RATE) for i in range(0, len(pcm), step)],  # type: ignore[attr-defined]
        dtype=float,
    )
    mask = np.round(_moving_average(flags, VAD_AVERAGE_WIDTH)).astype(bool)
    width = VAD_MAX_SILENCE + 1
    mask = np.convolve(mask, np.ones(width), mode="same") > 0  # binary dilation
    return wav[np.repeat(mask, VAD_WINDOW)]


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (librosa's default): linear below 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    mels = hz / (200.0 / 3)
    log_part = hz >= 1000.0
    mels[log_part] = 15.0 + np.log(hz[log_part] / 1000.0) / (np.log(6.4) / 27.0)
    return mels


def _mel_to_hz(mels: np.ndarray) -> np.ndarray:
    hz = (200.0 / 3) * mels
    log_part = mels >= 15.0
    hz[log_part] = 1000.0 * np.exp((np.log(6.4) / 27.0) * (mels[log_part] - 15.0))
    return hz


@functools.cache
def mel_filters() -> np.ndarray:
    """(N_MELS, N_FFT // 2 + 1) slaney-normalized triangular filters, 0 Hz to 8 kHz."""
    fft_freqs = np.linspace(0, RATE / 2, 1 + N_FFT // 2)
    top = _hz_to_mel(np.array([RATE / 2]))[0]
    edges = _mel_to_hz(np.linspace(0.0, top, N_MELS + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / widths[:-1, None]
    upper = ramps[2:] / widths[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (edges[2 : N_MELS + 2] - edges[:N_MELS]))[:, None]
    return weights.astype(np.float32)


@functools.cache
def _window() -> np.ndarray:
    n = np.arange(N_FFT)
    return (0.5 - 0.5 * np.cos(2 * np.pi * n / N_FFT)).astype(np.float32)  # periodic Hann


def mel_spectrogram(wav: np.ndarray) -> np.ndarray:
    """(frames, N_MELS) mel power spectrogram, centred frames every 10 ms (not a log)."""
    padded = np.pad(wav.astype(np.float32), N_FFT // 2)
    count = 1 + (len(padded) - N_FFT) // HOP
    frames = np.lib.stride_tricks.as_strided(
        padded, shape=(count, N_FFT), strides=(padded.strides[0] * HOP, padded.strides[0])
    )
    power = np.abs(np.fft.rfft(frames * _window(), axis=1)) ** 2
    return (power.astype(np.float32) @ mel_filters().T).astype(np.float32)
