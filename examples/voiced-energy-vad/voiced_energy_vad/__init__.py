"""An energy-threshold VAD: a whole voiced plugin in one module.

Install it (``pip install ./examples/voiced-energy-vad``) and select it with
``[pipeline] vad = "energy"``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from voiced.api.hooks import hookimpl


class EnergyVadOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    threshold_dbfs: float = Field(-40.0, le=0, description="frames louder than this are speech")
    frame_ms: int = Field(20, ge=10, le=100)


class EnergyVad:
    def __init__(self, options: EnergyVadOptions, app: Any = None) -> None:
        self.options = options
        self.frame_samples = 16000 * options.frame_ms // 1000

    def load(self) -> None:
        pass

    def close(self) -> None:
        pass

    def speech_probability(self, frame: bytes) -> float:
        samples = np.frombuffer(frame, dtype="<i2").astype(np.float32) / 32768.0
        rms = float(np.sqrt(np.mean(samples * samples))) if len(samples) else 0.0
        dbfs = 20 * np.log10(max(rms, 1e-9))
        return 1.0 if dbfs > self.options.threshold_dbfs else 0.0


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "vad",
        "energy",
        EnergyVad,
        options=EnergyVadOptions,
        description="RMS energy threshold (example third-party plugin)",
    )
