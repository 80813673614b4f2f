"""Voice activity detection with WebRTC's VAD (the maintained ``webrtcvad-wheels``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from voiced.api.audio import PIPELINE_FORMAT
from voiced.api.hooks import hookimpl


class WebrtcVadOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    aggressiveness: int = Field(2, ge=0, le=3, description="0 = least, 3 = most aggressive")
    frame_ms: int = Field(30, description="10, 20 or 30")

    def model_post_init(self, _: Any) -> None:
        if self.frame_ms not in (10, 20, 30):
            raise ValueError(f"frame_ms must be 10, 20 or 30, not {self.frame_ms}")


class WebrtcVad:
    """Frame-level speech/non-speech from webrtcvad: 1.0 or 0.0 per frame."""

    def __init__(self, options: WebrtcVadOptions, app: Any = None) -> None:
        self.options = options
        self.frame_samples = PIPELINE_FORMAT.rate * options.frame_ms // 1000
        self._vad: Any = None

    def load(self) -> None:
        import webrtcvad

        self._vad = webrtcvad.Vad(self.options.aggressiveness)

    def speech_probability(self, frame: bytes) -> float:
        return 1.0 if self._vad.is_speech(frame, PIPELINE_FORMAT.rate) else 0.0

    def close(self) -> None:
        self._vad = None


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "vad",
        "webrtc",
        WebrtcVad,
        options=WebrtcVadOptions,
        description="WebRTC VAD (CPU, 10/20/30 ms frames)",
    )
