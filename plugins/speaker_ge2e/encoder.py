"""The ``ge2e`` speaker stage: an utterance -> its voice print."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from voiced.api.devices import choose_torch_device, probe_torch
from voiced.api.stages import NoVoice, VoicePrint

from . import features
from .checkpoint import read_checkpoint
from .network import NumpyEncoder, TorchEncoder

log = logging.getLogger(__name__)

PARTIAL_FRAMES = 160  # 1.6 s per partial utterance, as the network was trained
PARTIALS_PER_SECOND = 1.3
MIN_COVERAGE = 0.75
MIN_SPEECH_SECONDS = 0.5  # less than this after trimming silences: no voice to tell
INSTALL = "pip install --no-deps resemblyzer  (17 MB: only its weights are used)"


class Ge2eOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    weights: str | None = Field(
        None, description="path of a GE2E checkpoint; unset: resemblyzer's bundled pretrained.pt"
    )
    device: str = Field(
        "auto", description="auto (a GPU when torch has one, else numpy on the CPU), cpu, cuda:N"
    )


def bundled_weights() -> Path:
    """resemblyzer's ``pretrained.pt``, found without importing resemblyzer (whose import
    needs torch and librosa)."""
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"the ge2e speaker encoder needs resemblyzer's weights: {INSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / "pretrained.pt"
    if not path.is_file():
        raise RuntimeError(f"{path} is missing; reinstall: {INSTALL}")
    return path


def partial_slices(samples: int) -> list[slice]:
    """Where resemblyzer cuts an utterance into overlapping 1.6 s partials (mel frames)."""
    n_frames = int(np.ceil((samples + 1) / features.HOP))
    step = int(np.round(features.RATE / PARTIALS_PER_SECOND / features.HOP))
    starts = range(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step)
    slices = [slice(s, s + PARTIAL_FRAMES) for s in starts]
    last = slices[-1]
    coverage = (samples - last.start * features.HOP) / (PARTIAL_FRAMES * features.HOP)
    if coverage < MIN_COVERAGE and len(slices) > 1:
        slices.pop()
    return slices


class Ge2eEncoder:
    """Speaker stage: resemblyzer's preprocessing, partials and network, without torch."""

    name = "ge2e"

    def __init__(self, options: Ge2eOptions, app: Any = None) -> None:
        self.options = options
        self.device = "cpu"
        self._network: Any = None
        self._webrtcvad: Any = None
        self._blas: Any = None

    def load(self) -> None:
        import webrtcvad
        from threadpoolctl import ThreadpoolController

        self._blas = ThreadpoolController()

        path = Path(self.options.weights) if self.options.weights else bundled_weights()
        state = read_checkpoint(path)
        weights = state.get("model_state", state) if isinstance(state, dict) else None
        if not isinstance(weights, dict) or "linear.weight" not in weights:
            raise RuntimeError(f"{path} holds no GE2E encoder weights")
        self._network = self._network_for(weights)
        self.device = self._network.device
        self._webrtcvad = webrtcvad
        self._network(np.zeros((1, PARTIAL_FRAMES, features.N_MELS), np.float32))  # warm-up
        log.info("speaker encoder ge2e loaded on %s from %s", self.device, path)

    def _network_for(self, weights: dict[str, np.ndarray]) -> Any:
        if self.options.device == "cpu":
            return NumpyEncoder(weights)
        choice = choose_torch_device(self.options.device, "float32", probe_torch())
        if choice.device == "cpu":
            log.info("speaker encoder on the CPU (numpy): %s", choice.reason)
            return NumpyEncoder(weights)
        return TorchEncoder(weights, choice.device)

    def embed(self, audio: bytes) -> VoicePrint:
        # One BLAS thread: these matrices are small, and two threads waiting on each other
        # on a busy machine cost several times the work itself (10x measured for the mel).
        with self._blas.limit(limits=1, user_api="blas"):
            return self._embed(audio)

    def _embed(self, audio: bytes) -> VoicePrint:
        wav = features.normalize_volume(features.pcm_to_float(audio))
        wav = features.trim_long_silences(wav, self._webrtcvad.Vad(3))  # fresh: it has state
        seconds = len(wav) / features.RATE
        if seconds < MIN_SPEECH_SECONDS:
            raise NoVoice(f"{seconds:.2f} s of speech: too little to tell a voice")
        slices = partial_slices(len(wav))
        needed = slices[-1].stop * features.HOP
        if needed >= len(wav):
            wav = np.pad(wav, (0, needed - len(wav)))
        mel = features.mel_spectrogram(wav)
        parts = self._network(np.stack([mel[s] for s in slices]))
        mean = parts.mean(axis=0)
        vector = (mean / np.linalg.norm(mean)).astype(np.float32)
        return VoicePrint(vector, parts, round(seconds, 3), "ge2e")

    def close(self) -> None:
        self._network = None
