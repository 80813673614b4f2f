"""TTS engine ``vits-transformers``: VITS checkpoints (e.g. Meta MMS-TTS) on torch.

Runs on the GPU through ``torch.cuda`` (ROCm builds of torch show AMD cards there too) in
float16, or on the CPU in float32; the device is chosen by :mod:`voiced.accel`. No VITS
checkpoint ships in any package here: ``model`` must name a local directory (as written by
``save_pretrained``) or a Hugging Face hub id already in the local cache, unless
``allow_download`` is set.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from voiced.api.audio import AudioChunk, AudioFormat, float_to_pcm16
from voiced.api.devices import choose_torch_device, from_pretrained_dtype
from voiced.api.hooks import hookimpl

log = logging.getLogger(__name__)


class TtsInputError(ValueError):
    """Text that cannot be spoken (empty, or nothing the model's vocabulary knows)."""


class ModelNotFoundError(FileNotFoundError):
    """A model directory or hub id that cannot be loaded; the message says how to fix it."""


class VitsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field("facebook/mms-tts-eng", description="local directory or hub id")
    allow_download: bool = Field(
        False, description="let a hub id download; off: only the local cache is used"
    )
    device: str = Field("auto", description="auto | cpu | cuda | cuda:N | rocm")
    dtype: Literal["auto", "float16", "bfloat16", "float32"] = "auto"
    speaking_rate: float = Field(1.0, gt=0, le=5)
    noise_scale: float | None = Field(None, ge=0, description="default: the model's (0.667)")
    noise_scale_duration: float | None = Field(None, ge=0)
    seed: int | None = Field(None, description="fixed seed: the same text sounds the same")


def _is_local(model: str) -> bool:
    return model.startswith((".", "/", "~", "\\")) or Path(model).expanduser().exists()


class VitsTts:
    """Speaks one sentence at a time with a transformers ``VitsModel``."""

    name = "vits-transformers"

    def __init__(self, options: VitsOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.device = "cpu"
        self.dtype = "float32"
        self.info: dict[str, Any] = {"engine": self.name}
        self.format = AudioFormat(rate=16000, width=2, channels=1)
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        try:
            import torch
            import transformers
            from transformers import VitsModel, VitsTokenizer
        except ImportError as exc:
            raise ImportError(
                f"vits-transformers needs torch and transformers ({exc}); "
                "pip install 'voiced[gpu]' (torch from the ROCm or CUDA index first)"
            ) from exc

        choice = choose_torch_device(self.options.device, self.options.dtype)
        source, local_only = self._source()
        try:
            model = VitsModel.from_pretrained(
                source,
                local_files_only=local_only,
                **from_pretrained_dtype(transformers.__version__, getattr(torch, choice.dtype)),
            )
        except OSError as exc:
            raise ModelNotFoundError(self._not_found(source, local_only, exc)) from exc
        try:
            tokenizer = VitsTokenizer.from_pretrained(source, local_files_only=local_only)
        except (OSError, TypeError) as exc:  # TypeError: transformers opens vocab_file=None
            raise ModelNotFoundError(
                f"VITS model {source!r} has no usable tokenizer (vocab.json, "
                f"tokenizer_config.json): {exc}"
            ) from exc
        model = model.to(choice.device).eval()
        model.speaking_rate = self.options.speaking_rate
        if self.options.noise_scale is not None:
            model.noise_scale = self.options.noise_scale
        if self.options.noise_scale_duration is not None:
            model.noise_scale_duration = self.options.noise_scale_duration
        log.info("vits model %s on %s (%s): %s", source, choice.device, choice.dtype, choice.reason)
        self._model, self._tokenizer = model, tokenizer
        self.device, self.dtype = choice.device, choice.dtype
        rate = int(model.config.sampling_rate)
        self.format = AudioFormat(rate=rate, width=2, channels=1)
        self.info = {
            "engine": self.name,
            "model": source,
            "device": choice.device,
            "backend": choice.backend,
            "dtype": choice.dtype,
            "reason": choice.reason,
            "torch": str(torch.__version__),
            "sample_rate": rate,
        }
        self.synthesize("Ready.")  # warm-up: kernels, allocator

    def _source(self) -> tuple[str, bool]:
        model = self.options.model
        if _is_local(model):
            path = Path(model).expanduser()
            if not (path / "config.json").is_file():
                raise ModelNotFoundError(
                    f"VITS model directory {path} not found or has no config.json "
                    "(write one with VitsModel.save_pretrained and VitsTokenizer.save_pretrained)"
                )
            return str(path), True
        return model, not self.options.allow_download

    def _not_found(self, source: str, local_only: bool, exc: OSError) -> str:
        if local_only and not _is_local(source):
            return (
                f"VITS model {source!r} is not a local directory and not in the Hugging Face "
                "cache; download it once (huggingface-cli download "
                f"{source}) and point model at the folder, or set allow_download = true"
            )
        return f"VITS model {source!r} could not be loaded: {exc}"

    def synthesize(self, text: str) -> AudioChunk:
        """One sentence -> 16-bit mono PCM at the model's rate (16 kHz for MMS-TTS)."""
        import torch

        if not text or not text.strip():
            raise TtsInputError("nothing to say: the text is empty")
        if self._model is None:
            raise RuntimeError("VITS model is not loaded: call load() first")
        inputs = self._tokenizer(text, return_tensors="pt")
        if inputs["input_ids"].shape[-1] == 0:
            raise TtsInputError(
                f"nothing to say: no character of {text[:40]!r} is in the model's vocabulary"
            )
        inputs = {k: v.to(self.device) for k, v in inputs.items()}
        with self._lock, torch.inference_mode():
            waveform = self._waveform(inputs)
            if self.dtype != "float32" and not bool(torch.isfinite(waveform).all()):
                self._upcast(f"{self.dtype} output had NaN/inf for {text[:40]!r}")
                waveform = self._waveform(inputs)
        samples = waveform.float().cpu().numpy().astype(np.float32, copy=False)
        return AudioChunk(float_to_pcm16(samples), self.format)

    def _waveform(self, inputs: dict[str, Any]) -> Any:
        import torch

        if self.options.seed is not None:
            torch.manual_seed(self.options.seed)
        return self._model(**inputs).waveform[0]

    def _upcast(self, why: str) -> None:
        """Half precision overflowed: this model runs in float32 from now on (said once)."""
        log.warning("vits: %s; running in float32 from now on", why)
        self._model = self._model.float()
        self.dtype = "float32"
        self.info |= {"dtype": "float32", "upcast": why}

    def close(self) -> None:
        self._model = None
        self._tokenizer = None


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "tts",
        "vits-transformers",
        VitsTts,
        options=VitsOptions,
        description="VITS (e.g. MMS-TTS) on torch: fp16 on ROCm/CUDA, fp32 on CPU",
    )
