"""TTS on a remote Wyoming service (another voiced, ``wyoming-piper``, ...)."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import Field
from wyoming.audio import AudioChunk as WyChunk
from wyoming.audio import AudioStart, AudioStop
from wyoming.tts import Synthesize, SynthesizeVoice

from voiced.api.audio import AudioChunk, AudioFormat

from .options import RemoteOptions
from .peer import RemoteError, WyomingPeer

log = logging.getLogger(__name__)


class RemoteTtsOptions(RemoteOptions):
    voice: str | None = Field(None, description="ask the service for this voice by name")
    speaker: str | None = None


class RemoteWyomingTts:
    """``synthesize()`` sends one sentence and collects the audio the service streams back."""

    def __init__(self, options: RemoteTtsOptions, app: Any) -> None:
        self.options = options
        self.peer = options.peer()
        self.name = f"wyoming:{self.peer.address.host}:{self.peer.address.port}"
        self.device = str(self.peer.address)
        self.info: dict[str, Any] = {"engine": self.name, "remote": str(self.peer.address)}

    def load(self) -> None:
        try:
            self.info.update(describe_tts(self.peer, self.options.voice))
        except RemoteError as exc:
            log.warning("%s: not reachable at start-up (%s); will retry per call", self.name, exc)
            self.info["reachable"] = False

    def synthesize(self, text: str) -> AudioChunk:
        voice = None
        if self.options.voice or self.options.speaker:
            voice = SynthesizeVoice(name=self.options.voice, speaker=self.options.speaker)
        answer = self.peer.request(
            [Synthesize(text=text, voice=voice).event()], lambda e: AudioStop.is_type(e.type)
        )
        starts = [AudioStart.from_event(e) for e in answer if AudioStart.is_type(e.type)]
        if not starts:
            raise RemoteError(f"{self.peer.address} sent audio-stop without audio-start")
        start = starts[0]
        pcm = b"".join(WyChunk.from_event(e).audio for e in answer if WyChunk.is_type(e.type))
        return AudioChunk(pcm, AudioFormat(start.rate, start.width, start.channels))

    def close(self) -> None:
        self.peer.close()


def describe_tts(peer: WyomingPeer, wanted: str | None = None) -> dict[str, Any]:
    info = peer.describe()
    programs = [p for p in info.tts if p.installed]
    if not programs:
        raise RemoteError(f"{peer.address} offers no text-to-speech (no tts in its info)")
    voices = [v.name for p in programs for v in p.voices if v.installed]
    if wanted and wanted not in voices:
        raise RemoteError(f"{peer.address} has no voice {wanted!r}; it offers {voices[:10]}")
    # wyoming-piper lists every voice it can fetch: keep the event and the doctor line short
    shown = [wanted] if wanted else voices[:5]
    return {"program": programs[0].name, "models": shown, "voices": len(voices), "reachable": True}
