"""ASR on a remote Wyoming service (another voiced, ``wyoming-faster-whisper``, ...)."""

from __future__ import annotations

import logging
import time
from typing import Any

from pydantic import Field
from wyoming.asr import Transcribe
from wyoming.asr import Transcript as WyTranscript
from wyoming.audio import AudioChunk, AudioStart, AudioStop

from voiced.api.audio import PIPELINE_FORMAT
from voiced.api.intents import Transcript
from voiced.api.languages import whisper_language
from voiced.api.stages import StageCall

from .options import RemoteOptions
from .peer import RemoteError, WyomingPeer
from .recognized import recognized_by
from .stream import RemoteAsrStream

log = logging.getLogger(__name__)


class RemoteAsrOptions(RemoteOptions):
    language: str | None = Field(None, description="ask for this language; default: the daemon's")
    model: str | None = Field(None, description="ask the service for this model by name")
    samples_per_chunk: int = Field(1024, ge=64, le=65536)
    stream: bool = Field(
        True,
        description="send speech while it is spoken (audio-start at speech start, audio-stop "
        "at the VAD end) so the remote starts early; false: the whole utterance at the end",
    )


class RemoteWyomingAsr:
    """``transcribe()`` sends the utterance to the service and waits for its transcript."""

    def __init__(self, options: RemoteAsrOptions, app: Any) -> None:
        self.options = options
        self.peer = options.peer()
        self.name = f"wyoming:{self.peer.address.host}:{self.peer.address.port}"
        self.device = str(self.peer.address)
        settings = getattr(app, "settings", None)
        self.default_language = options.language or getattr(settings, "language", None)
        vad = getattr(settings, "vad", None)
        self.longest_utterance = getattr(vad, "max_command_seconds", 15.0) + 5.0
        self.info: dict[str, Any] = {"engine": self.name, "remote": str(self.peer.address)}

    def load(self) -> None:
        """Ask the service what it is; a service that is down now is not fatal (it may come
        back), so the chain keeps this engine and falls back per call."""
        try:
            self.info.update(describe_asr(self.peer))
        except RemoteError as exc:
            log.warning("%s: not reachable at start-up (%s); will retry per call", self.name, exc)
            self.info["reachable"] = False

    def transcribe(self, audio: bytes, language: str | None = None) -> Transcript:
        language = language or self.default_language
        fmt = PIPELINE_FORMAT
        step = self.options.samples_per_chunk * fmt.width
        events = [Transcribe(name=self.options.model, language=_spoken(language)).event()]
        events.append(AudioStart(fmt.rate, fmt.width, fmt.channels).event())
        events.extend(
            AudioChunk(fmt.rate, fmt.width, fmt.channels, audio[i : i + step]).event()
            for i in range(0, len(audio), step)
        )
        events.append(AudioStop().event())
        started = time.monotonic()
        answer = self.peer.request(events, lambda e: WyTranscript.is_type(e.type))
        result = WyTranscript.from_event(answer[-1])
        return self.transcript(result, answer[-1].data, language, audio, started)

    def transcript(
        self,
        result: WyTranscript,
        event_data: dict[str, Any],
        language: str | None,
        audio: bytes,
        started: float,
        **data: Any,
    ) -> Transcript:
        """The remote's answer as a transcript: what it heard, and what it did with the home."""
        fmt = PIPELINE_FORMAT
        return Transcript.heard(
            result.text,
            result.language or language,
            engine=self.name,
            audio_seconds=len(audio) / fmt.bytes_per_second,
            data={
                "remote": str(self.peer.address),
                "remote_s": round(time.monotonic() - started, 4),
                **data,
                **recognized_by(event_data, self.info.get("program")),
            },
        )

    def open_stream(self, call: StageCall, language: str | None = None) -> RemoteAsrStream | None:
        """A stream for the utterance starting now (None while the remote is resting after a
        failure, or with ``stream = false``: the whole utterance goes the usual way)."""
        if not self.options.stream or self.peer.resting:
            return None
        language = _spoken(language or self.default_language)
        return RemoteAsrStream(self, language, self.longest_utterance)

    def close(self) -> None:
        self.peer.close()


def describe_asr(peer: WyomingPeer) -> dict[str, Any]:
    """The service's ASR program and models, from its ``info``; RemoteError if it has none."""
    info = peer.describe()
    programs = [p for p in info.asr if p.installed]
    if not programs:
        raise RemoteError(f"{peer.address} offers no speech-to-text (no asr in its info)")
    models = [m.name for p in programs for m in p.models if m.installed]
    return {"program": programs[0].name, "models": models, "reachable": True}


def _spoken(language: str | None) -> str | None:
    """The language as Whisper servers name it (``zh-CN`` -> ``zh``): what Wyoming ASR peers
    such as wyoming-faster-whisper pass on to Whisper."""
    return whisper_language(language) if language else None
