"""Who is speaking, for the running daemon: the speaker stage and the enrolled voices.

``SpeakerId`` is built when ``pipeline.speaker`` names an encoder. It loads the encoder and
the voices file; a voices file that cannot be used is an error at start and the daemon runs
on without telling speakers (every speaker is then ``unknown``, so a command that
``[[speakers.permissions]]`` limits to named people is refused rather than allowed).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from voiced.permissions import SpeakersConfig
from voiced.speakers import UNKNOWN, SpeakerMatch, VoiceBook, VoiceBookError, state_directory
from voiced.stages import NoVoice

log = logging.getLogger(__name__)


def voices_path(config: SpeakersConfig) -> Path:
    """The voices file: ``speakers.file``, relative paths in the state directory."""
    path = Path(config.file).expanduser()
    return path if path.is_absolute() else state_directory() / path


class SpeakerId:
    """The loaded speaker stage and the enrolled voices; ``identify`` runs in a worker thread."""

    def __init__(self, name: str, encoder: Any, config: SpeakersConfig) -> None:
        self.name = name
        self.encoder = encoder
        self.config = config
        self.book: VoiceBook | None = None
        self.disabled: str | None = "not loaded"  # why speakers are not told, else None
        self._lock = threading.Lock()  # enrollment over MQTT changes the book at run time

    def load(self) -> None:
        """Load the encoder (raises what it raises) and open the voices file; a bad file
        leaves ``disabled`` set to the reason instead of raising."""
        self.encoder.load()
        self._open_book()

    def reconfigure(self, config: SpeakersConfig) -> None:
        """New ``[speakers]`` settings (a reload): the rule and permissions at once, the
        voices file opened again when it moved."""
        moved = voices_path(config) != voices_path(self.config)
        self.config = config
        if moved:
            self._open_book()

    def _open_book(self) -> None:
        path = voices_path(self.config)
        try:
            book = VoiceBook.open(path, self.model)
        except VoiceBookError as exc:
            self.book = None
            self.disabled = f"{exc}; running without speaker checks (every speaker unknown)"
            log.error("speakers: %s", self.disabled)
            return
        with self._lock:
            self.book, self.disabled = book, None
        names = ", ".join(book.names()) or "none"
        log.info("speakers: %d enrolled in %s (%s)", len(book.voices), path, names)

    @property
    def model(self) -> str:
        return str(getattr(self.encoder, "name", self.name))

    def identify(self, audio: bytes) -> SpeakerMatch:
        """Who spoke ``audio`` (16 kHz mono PCM): a name, or ``unknown``."""
        if self.book is None or self.disabled is not None:
            return SpeakerMatch(UNKNOWN, None)
        try:
            voice = self.encoder.embed(audio)
        except NoVoice:
            return SpeakerMatch(UNKNOWN, None)
        with self._lock:
            return self.book.identify(voice.vector, self.config.rule())

    def enroll(self, name: str, vectors: list[Any]) -> None:
        """Add or replace a voice while the daemon runs (and save the file)."""
        with self._lock:
            if self.book is None:
                raise VoiceBookError("the voices file could not be read; fix or remove it first")
            self.book.enroll(name, vectors)

    def forget(self, name: str) -> bool:
        with self._lock:
            return self.book.forget(name) if self.book is not None else False

    def close(self) -> None:
        self.encoder.close()
