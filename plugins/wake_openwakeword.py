"""Wake words with openWakeWord (``pyopen-wakeword``: TFLite models, no onnxruntime or torch).

One feature extractor (mel spectrogram + speech embedding) is shared by every configured wake
word, so listening for several at once costs little more than listening for one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from voiced.api.audio import PIPELINE_FORMAT, AudioChunk
from voiced.api.hooks import hookimpl
from voiced.api.stages import WAKE_SENSITIVITIES, WakeDetection

log = logging.getLogger(__name__)

BUNDLED = ("okay_nabu", "hey_jarvis", "alexa", "hey_mycroft", "hey_rhasspy")
FRAME_SAMPLES = 1280  # 80 ms: the step of openWakeWord's feature models
FRAME_BYTES = FRAME_SAMPLES * PIPELINE_FORMAT.width


class OpenWakeWordOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    models: list[str] = Field(
        ["okay_nabu"],
        min_length=1,
        description=f"bundled names ({', '.join(BUNDLED)}) or paths to .tflite models",
    )
    threshold: float = Field(0.5, gt=0.0, lt=1.0, description="score a wake word must reach")
    trigger_level: int = Field(
        1, ge=1, le=20, description="consecutive 80 ms frames at or above the threshold"
    )
    refractory_seconds: float = Field(
        2.0, ge=0.0, description="after a detection, ignore the same wake word this long"
    )

    @field_validator("models", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        """``--wake openwakeword:hey_jarvis,alexa`` gives a string: split it."""
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("models")
    @classmethod
    def _exist(cls, value: list[str]) -> list[str]:
        for name in value:
            resolve_model(name)  # raises ValueError naming the bundled choices
        return value


def threshold_for(configured: float, level: str) -> float:
    """The score threshold for a sensitivity level: "moderately" keeps the configured one,
    "slightly" goes halfway to 1, "very" halfway to 0 (0.5 -> 0.75 / 0.5 / 0.25)."""
    if level not in WAKE_SENSITIVITIES:
        raise ValueError(f"wake sensitivity {level!r}: one of {', '.join(WAKE_SENSITIVITIES)}")
    if level == "slightly":
        return configured + (1.0 - configured) / 2
    if level == "very":
        return configured / 2
    return configured


class OpenWakeWord:
    """``process(chunk)`` takes 16 kHz mono 16-bit audio of any length; 80 ms frames inside."""

    def __init__(self, options: OpenWakeWordOptions, app: Any = None) -> None:
        self.options = options
        self.paths = [resolve_model(name) for name in options.models]
        self.threshold = options.threshold  # in force: the configured one unless a level is set
        self.features: Any = None
        self.models: list[Any] = []
        self._pending = b""
        self._samples = 0  # audio seen, in samples: the clock for the refractory period
        self._runs: list[int] = []  # consecutive frames at/above threshold, per model
        self._quiet_until: list[int] = []  # sample count before which a model stays quiet

    @property
    def names(self) -> list[str]:
        return [path.stem for path in self.paths]

    def load(self) -> None:
        try:
            from pyopen_wakeword import OpenWakeWord as Model
            from pyopen_wakeword import OpenWakeWordFeatures
        except ImportError as exc:
            raise RuntimeError(
                f"the openwakeword stage needs pyopen-wakeword: pip install pyopen-wakeword ({exc})"
            ) from None
        try:
            self.features = OpenWakeWordFeatures.from_builtin()
            self.models = [Model.from_model(path) for path in self.paths]
        except (OSError, ValueError, RuntimeError) as exc:
            raise RuntimeError(f"openwakeword could not load its models: {exc}") from None
        self._runs = [0] * len(self.models)
        self._quiet_until = [0] * len(self.models)
        # Warm-up: the first call computes features for the library's 8 s of autofill.
        self.process(AudioChunk(b"\x00\x00" * FRAME_SAMPLES))
        self.reset()
        log.info(
            "openwakeword: listening for %s (threshold %.2f)",
            ", ".join(self.names),
            self.options.threshold,
        )

    def process(self, chunk: AudioChunk) -> WakeDetection | None:
        if self.features is None:
            raise RuntimeError("the openwakeword stage was not loaded (call load() first)")
        data = self._pending + chunk.audio
        usable = len(data) - len(data) % FRAME_BYTES
        self._pending = data[usable:]
        detection = None
        for offset in range(0, usable, FRAME_BYTES):
            found = self._frame(data[offset : offset + FRAME_BYTES])
            if found is not None and detection is None:
                detection = found
        return detection

    def _frame(self, frame: bytes) -> WakeDetection | None:
        self._samples += FRAME_SAMPLES
        best: WakeDetection | None = None
        for embeddings in self.features.process_streaming(frame):
            for index, model in enumerate(self.models):
                for score in model.process_streaming(embeddings):
                    found = self._score(index, float(score))
                    if found is not None and (best is None or found.score > best.score):
                        best = found
        return best

    def _score(self, index: int, score: float) -> WakeDetection | None:
        if score < self.threshold:
            self._runs[index] = 0
            return None
        self._runs[index] += 1
        if self._runs[index] < self.options.trigger_level:
            return None
        if self._samples < self._quiet_until[index]:
            return None
        self._runs[index] = 0
        refractory = int(self.options.refractory_seconds * PIPELINE_FORMAT.rate)
        self._quiet_until[index] = self._samples + refractory
        return WakeDetection(self.names[index], score, {"model": str(self.paths[index])})

    def set_sensitivity(self, level: str) -> float:
        """One of ``WAKE_SENSITIVITIES`` (``threshold_for``); the threshold now in force."""
        self.threshold = threshold_for(self.options.threshold, level)
        log.info("openwakeword: %s sensitive (threshold %.2f)", level, self.threshold)
        return self.threshold

    def reset(self) -> None:
        """Forget the wake words' recent history (features keep streaming: they are just audio)."""
        self._pending = b""
        self._runs = [0] * len(self.models)
        for model in self.models:
            model.reset()

    def close(self) -> None:
        for model in self.models:
            model.close()
        if self.features is not None:
            self.features.close()
        self.models, self.features = [], None


def resolve_model(name: str) -> Path:
    """A bundled wake word name, or a path to a custom openWakeWord .tflite model."""
    if name in BUNDLED:
        import importlib.util

        spec = importlib.util.find_spec("pyopen_wakeword")
        if spec is None or not spec.submodule_search_locations:
            raise ValueError("wake word models need pyopen-wakeword: pip install pyopen-wakeword")
        return Path(next(iter(spec.submodule_search_locations))) / "models" / f"{name}.tflite"
    path = Path(name).expanduser()
    if path.suffix != ".tflite" or not path.is_file():
        raise ValueError(
            f"wake word {name!r} is neither a bundled model ({', '.join(BUNDLED)}) nor an "
            f"existing .tflite file"
        )
    return path


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "wake",
        "openwakeword",
        OpenWakeWord,
        options=OpenWakeWordOptions,
        shorthand="models",
        description="openWakeWord (TFLite): okay_nabu, hey_jarvis, alexa, hey_mycroft, "
        "hey_rhasspy or a custom .tflite",
    )
