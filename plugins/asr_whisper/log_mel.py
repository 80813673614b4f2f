"""Whisper's log-mel features computed where the audio is going: on the engine's device.

The same arithmetic as transformers' ``WhisperFeatureExtractor`` (its torch path: a Hann
window STFT, power spectrum without the last frame, its own Slaney mel filters, log10 clamped
at 1e-10, floor at max - 8, then (x + 4) / 4), but it keeps the result on the device: the
extractor always hands back a NumPy array, which costs a device -> host -> device round trip
per command on a GPU. On the CPU the extractor itself is used.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class LogMel:
    """Log-mel features of one padded window, on ``device``."""

    def __init__(self, extractor: Any, device: str) -> None:
        import torch

        self._torch = torch
        self.device = device
        self.n_fft = int(extractor.n_fft)
        self.hop = int(extractor.hop_length)
        self.window = torch.hann_window(self.n_fft, device=device)
        self.filters = torch.from_numpy(np.asarray(extractor.mel_filters, dtype=np.float32)).to(
            device
        )

    def __call__(self, samples: Any) -> Any:
        """float32 samples (16 kHz; NumPy, or a tensor already on the device) -> features of
        shape (1, n_mels, len(samples) // hop)."""
        torch = self._torch
        if isinstance(samples, torch.Tensor):
            waveform = samples.to(self.device, torch.float32)
        else:
            waveform = torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32)).to(
                self.device, non_blocking=True
            )
        stft = torch.stft(waveform, self.n_fft, self.hop, window=self.window, return_complex=True)
        power = (stft[..., :-1].abs() ** 2).contiguous()
        log_spec = torch.clamp(self.filters.T @ power, min=1e-10).log10()
        log_spec = torch.maximum(log_spec, log_spec.max() - 8.0)
        return ((log_spec + 4.0) / 4.0).unsqueeze(0)
