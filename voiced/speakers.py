"""The enrolled voices and who spoke: a small file of embeddings, never audio.

``VoiceBook`` holds one mean embedding per enrolled name in a JSON file (mode 600) in the
state directory. ``identify`` compares an utterance's embedding with each voice by cosine
similarity. The closest voice is named when it is closer than the runner-up by a margin:
its score is its similarity minus the runner-up's (at least ``stranger``, how close a voice
nobody enrolled typically comes; with one voice enrolled, ``alone``), and it must reach the
threshold. Judging against the other enrolled voices halves the equal error rate of plain
cosine similarity (benchmarks/speakers.py).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

UNKNOWN = "unknown"
FORMAT = "voiced-speakers/1"
MAX_FILE_BYTES = 4 * 1024 * 1024  # ~1000 voices of 256 floats; a larger file is not ours
NAME = re.compile(r"^[a-z0-9][a-z0-9 _.-]{0,39}$")


@dataclass(frozen=True)
class MatchRule:
    """When the closest enrolled voice is named (constants: benchmarks/speakers.py)."""

    threshold: float
    """The least margin over the runner-up that names the closest voice."""
    stranger: float
    """The runner-up is taken as at least this similar (a voice nobody enrolled)."""
    alone: float
    """The runner-up's similarity when only one voice is enrolled."""
    minimum: float = -1.0
    """The least similarity with the closest voice that may name it (off by default): higher
    turns away more voices nobody enrolled, and more of the enrolled ones too."""

    def score(self, best: float, runner_up: float | None) -> float:
        floor = self.alone if runner_up is None else max(runner_up, self.stranger)
        return best - floor


class VoiceBookError(ValueError):
    """The voices file cannot be used (unreadable, corrupted, another encoder's)."""


@dataclass(frozen=True)
class SpeakerMatch:
    """Who spoke one utterance."""

    name: str
    """An enrolled name, or ``unknown`` (no enrolled voice close enough, or no voice heard)."""
    score: float | None
    """The closest voice's similarity minus the runner-up's (or the floor): compared with
    the threshold. None when nothing could be compared."""
    similarity: float | None = None
    """Cosine similarity with the closest enrolled voice."""
    closest: str | None = None
    """The closest enrolled voice, even when not named (for logs and tuning)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def normalize_speaker_name(name: str) -> str:
    """A speaker's name as stored and compared: lower case, single spaces. Raises ValueError."""
    clean = " ".join(name.strip().lower().split())
    if clean == UNKNOWN or not NAME.match(clean):
        raise ValueError(
            f"speaker name {name!r}: use 1-40 letters, digits, spaces, '.', '_' or '-' "
            f"(and not {UNKNOWN!r})"
        )
    return clean


def state_directory() -> Path:
    """systemd's ``$STATE_DIRECTORY``, else ``$XDG_STATE_HOME/voiced`` (~/.local/state/voiced)."""
    if os.environ.get("STATE_DIRECTORY"):
        return Path(os.environ["STATE_DIRECTORY"].split(":")[0])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "voiced"


def _unit(vector: Any) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    if array.ndim != 1 or not np.isfinite(array).all() or norm == 0.0:
        raise VoiceBookError("an embedding must be a finite, non-zero vector")
    return array / norm


class VoiceBook:
    """Enrolled voices: name -> unit mean embedding of the enrollment utterances."""

    def __init__(self, path: Path, model: str) -> None:
        self.path = path
        self.model = model
        self.voices: dict[str, np.ndarray] = {}
        self.meta: dict[str, dict[str, Any]] = {}

    @classmethod
    def open(cls, path: Path, model: str) -> VoiceBook:
        """The book at ``path`` (empty when the file does not exist). Raises VoiceBookError."""
        book = cls(path, model)
        if path.exists():
            book._read()
        return book

    def _read(self) -> None:
        where = str(self.path)
        try:
            size = self.path.stat().st_size
            if size > MAX_FILE_BYTES:
                raise VoiceBookError(f"{where}: {size} bytes, more than a voices file holds")
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            if isinstance(exc, VoiceBookError):
                raise
            raise VoiceBookError(f"{where}: not a readable voices file ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise VoiceBookError(f"{where}: not a voices file (format is not {FORMAT!r})")
        if data.get("model") != self.model:
            raise VoiceBookError(
                f"{where}: voices enrolled with encoder {data.get('model')!r}, not "
                f"{self.model!r}: enroll again"
            )
        voices = data.get("voices")
        if not isinstance(voices, dict):
            raise VoiceBookError(f"{where}: 'voices' must be an object")
        dims = set()
        for name, entry in voices.items():
            try:
                vector = _unit(entry["embedding"])
            except (KeyError, TypeError, ValueError) as exc:
                raise VoiceBookError(f"{where}: voice {name!r}: {exc}") from None
            dims.add(vector.shape[0])
            self.voices[name] = vector
            self.meta[name] = {k: v for k, v in entry.items() if k != "embedding"}
        if len(dims) > 1:
            raise VoiceBookError(f"{where}: embeddings of different sizes {sorted(dims)}")

    def names(self) -> list[str]:
        return sorted(self.voices)

    def enroll(self, name: str, vectors: list[Any]) -> None:
        """Store ``name``'s voice (the mean of its utterances' embeddings) and save."""
        name = normalize_speaker_name(name)
        if not vectors:
            raise ValueError("enrolling needs at least one utterance")
        self.voices[name] = _unit(np.mean([_unit(v) for v in vectors], axis=0))
        now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.meta[name] = {"utterances": len(vectors), "enrolled": now}
        self.save()

    def forget(self, name: str) -> bool:
        """Remove a voice and save; False when there was none of that name."""
        name = " ".join(name.strip().lower().split())
        if self.voices.pop(name, None) is None:
            return False
        self.meta.pop(name, None)
        self.save()
        return True

    def identify(self, vector: Any, rule: MatchRule) -> SpeakerMatch:
        """The enrolled voice closest to ``vector`` when ``rule`` names it, else ``unknown``."""
        if not self.voices:
            return SpeakerMatch(UNKNOWN, None)
        unit = _unit(vector)
        names = list(self.voices)
        similarities = np.stack([self.voices[n] for n in names]) @ unit
        order = np.argsort(similarities)[::-1]
        best = float(similarities[order[0]])
        runner_up = float(similarities[order[1]]) if len(names) > 1 else None
        score = round(rule.score(best, runner_up), 4)
        named = score >= rule.threshold and best >= rule.minimum
        name = names[order[0]] if named else UNKNOWN
        return SpeakerMatch(name, score, round(best, 4), names[order[0]])

    def save(self) -> None:
        """Write the file atomically, readable by its owner only (mode 600)."""
        data = {
            "format": FORMAT,
            "model": self.model,
            "voices": {
                name: {**self.meta.get(name, {}), "embedding": [round(float(x), 6) for x in v]}
                for name, v in sorted(self.voices.items())
            },
        }
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(prefix=".speakers-", dir=self.path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(data, file, indent=1)
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        os.chmod(self.path, 0o600)
