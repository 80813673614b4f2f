"""The GE2E speaker encoder (3-layer LSTM, 256 units, a linear layer, ReLU, L2 norm) over
resemblyzer's weights: in numpy on the CPU, in torch on a GPU when torch has one."""

from __future__ import annotations

from typing import Any

import numpy as np

LAYERS = 3
HIDDEN = 256


def _ifog(matrix: np.ndarray) -> np.ndarray:
    """torch's gate order (i, f, g, o) along the last axis -> (i, f, o, g): one sigmoid call
    over the first three quarters, one tanh over the last."""
    i, f, g, o = np.split(matrix, 4, axis=-1)
    return np.ascontiguousarray(np.concatenate([i, f, o, g], axis=-1), dtype=np.float32)


class NumpyEncoder:
    """The network's forward pass in float32 numpy; ``weights`` is the checkpoint's state."""

    device = "cpu"

    def __init__(self, weights: dict[str, np.ndarray]) -> None:
        self.layers = [
            (
                _ifog(weights[f"lstm.weight_ih_l{i}"].T),
                _ifog(weights[f"lstm.weight_hh_l{i}"].T),
                _ifog(weights[f"lstm.bias_ih_l{i}"] + weights[f"lstm.bias_hh_l{i}"]),
            )
            for i in range(LAYERS)
        ]
        self.linear_w = np.ascontiguousarray(weights["linear.weight"].T, dtype=np.float32)
        self.linear_b = weights["linear.bias"].astype(np.float32)

    def __call__(self, mels: np.ndarray) -> np.ndarray:
        """(batch, frames, 40) mel power -> (batch, 256) unit-norm embeddings."""
        x = mels.astype(np.float32)
        h = np.zeros((x.shape[0], HIDDEN), np.float32)
        for w_ih, w_hh, bias in self.layers:
            x, h = _lstm_layer(x @ w_ih + bias, w_hh)
        raw = np.maximum(h @ self.linear_w + self.linear_b, 0.0)
        return raw / np.maximum(np.linalg.norm(raw, axis=1, keepdims=True), 1e-12)


def _lstm_layer(projected: np.ndarray, w_hh: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One LSTM layer over every step: (outputs, last hidden state). ``projected`` is each
    step's input term (batch, frames, 4 * HIDDEN) in (i, f, o, g) order."""
    batch, frames, _ = projected.shape
    h = np.zeros((batch, HIDDEN), np.float32)
    c = np.zeros((batch, HIDDEN), np.float32)
    gates = np.empty((batch, 4 * HIDDEN), np.float32)
    cell = np.empty((batch, HIDDEN), np.float32)
    outputs = np.empty((batch, frames, HIDDEN), np.float32)
    sig, g = gates[:, : 3 * HIDDEN], gates[:, 3 * HIDDEN :]
    i, f, o = sig[:, :HIDDEN], sig[:, HIDDEN : 2 * HIDDEN], sig[:, 2 * HIDDEN :]
    for t in range(frames):
        np.matmul(h, w_hh, out=gates)
        gates += projected[:, t]
        sig *= 0.5  # sigmoid(x) = (1 + tanh(x / 2)) / 2
        np.tanh(sig, out=sig)
        sig += 1.0
        sig *= 0.5
        np.tanh(g, out=g)
        c *= f
        np.multiply(i, g, out=cell)
        c += cell
        np.tanh(c, out=cell)
        np.multiply(o, cell, out=h)
        outputs[:, t] = h
    return outputs, h


class TorchEncoder:
    """The same network as a torch module on ``device`` (a GPU)."""

    def __init__(self, weights: dict[str, np.ndarray], device: str) -> None:
        import torch

        self.torch = torch
        self.device = device
        self.lstm = torch.nn.LSTM(40, HIDDEN, LAYERS, batch_first=True)
        self.linear = torch.nn.Linear(HIDDEN, HIDDEN)
        state = {k: torch.from_numpy(np.array(v)) for k, v in weights.items()}
        self.lstm.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("lstm.")})
        self.linear.load_state_dict({k[7:]: v for k, v in state.items() if k.startswith("linear.")})
        self.lstm.to(device).eval()
        self.linear.to(device).eval()

    def __call__(self, mels: np.ndarray) -> np.ndarray:
        torch: Any = self.torch
        with torch.inference_mode():
            x = torch.from_numpy(mels.astype(np.float32)).to(self.device)
            _, (hidden, _) = self.lstm(x)
            raw = torch.relu(self.linear(hidden[-1]))
            return (raw / raw.norm(dim=1, keepdim=True).clamp_min(1e-12)).cpu().numpy()
