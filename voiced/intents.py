"""What flows after the audio: transcripts, intents and spoken responses."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Transcript:
    """The text an ASR engine heard in one utterance."""

    text: str
    language: str = "en"
    engine: str = ""
    audio_seconds: float = 0.0
    no_speech: bool = False
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def heard(
        cls,
        text: str,
        language: str | None,
        *,
        engine: str,
        audio_seconds: float,
        data: dict[str, Any],
    ) -> Transcript:
        """What another program heard (a remote service, a pool worker): the text trimmed,
        no text meaning no speech, the language it names or else the one asked for."""
        text = text.strip()
        return cls(
            text=text,
            language=language or "en",
            engine=engine,
            audio_seconds=audio_seconds,
            no_speech=not text,
            data=data,
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Intent:
    """What the person meant: a Home Assistant-style intent name and its slots."""

    name: str
    slots: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    confidence: float = 1.0
    recognizer: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Response:
    """What a handler did and what to say back."""

    speech: str = ""
    handler: str = ""
    expects_reply: bool = False
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
