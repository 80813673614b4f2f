"""TTS engine ``espeak``: eSpeak NG, the offline voice for any of its ~100 languages.

Robotic next to Piper, but always there: one Debian package (``espeak-ng``) and no model
file, so a site whose language has no Piper voice still gets a spoken answer. Each sentence
is one ``espeak-ng --stdout`` process: espeak-ng keeps its voice in global state, so a
process of its own is what keeps two sites speaking two languages apart.
"""

from __future__ import annotations

import difflib
import logging
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from voiced.api.audio import AudioChunk, AudioFormat
from voiced.api.hooks import hookimpl

log = logging.getLogger(__name__)

INSTALL_HINT = "install it: apt install espeak-ng (Debian/Ubuntu), dnf install espeak-ng (Fedora)"
_OTHER_LANGUAGE = re.compile(r"\(([^\s()]+) (\d+)\)")  # "(zh-cmn 5)": a language, its priority
SECONDS_PER_CHAR = 0.05  # a generous bound: espeak-ng speaks ~15 characters in a second


class EspeakError(RuntimeError):
    """espeak-ng is missing, does not know the voice, or failed on a sentence."""


class EspeakOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    voice: str = Field(
        "en", description="a language (de, cmn, en-us) or voice name (espeak-ng --voices)"
    )
    speed: int = Field(160, ge=80, le=450, description="words per minute")
    pitch: int = Field(50, ge=0, le=99)
    gap_ms: int = Field(0, ge=0, le=1000, description="extra pause between words")
    binary: str = Field("espeak-ng", description="the espeak-ng program (a name on PATH or a path)")


@dataclass(frozen=True)
class EspeakVoice:
    """One line of ``espeak-ng --voices``."""

    language: str
    name: str
    file: str
    other_languages: tuple[tuple[str, int], ...] = ()  # (language, priority: lower first)


def find_voice(voices: list[EspeakVoice], wanted: str) -> EspeakVoice | None:
    """The voice for a language or a name: its own language first, then its name or file,
    then the voice that lists it as another language with the best priority ("en" is
    en-gb, priority 2, not en-029, priority 10)."""
    wanted = wanted.lower()
    for field in ("language", "name", "file"):
        for voice in voices:
            if getattr(voice, field).lower() == wanted:
                return voice
    ranked = [
        (priority, n, voice)
        for n, voice in enumerate(voices)
        for language, priority in voice.other_languages
        if language.lower() == wanted
    ]
    return min(ranked, key=lambda r: r[:2])[2] if ranked else None


def parse_voices(listing: str) -> list[EspeakVoice]:
    """The voices of ``espeak-ng --voices``: Pty Language Age/Gender VoiceName File Other."""
    voices = []
    for line in listing.splitlines()[1:]:
        fields = line.split()
        if len(fields) < 5:
            continue
        others = tuple((lang, int(prio)) for lang, prio in _OTHER_LANGUAGE.findall(line))
        voices.append(EspeakVoice(fields[1], fields[3], fields[4], others))
    return voices


def wav_payload(data: bytes) -> tuple[int, bytes]:
    """(sample rate, 16-bit PCM) of the WAV espeak-ng writes to a pipe.

    On a pipe espeak-ng cannot seek back to fill in the sizes, so the header's lengths are
    placeholders: the rate is read from the ``fmt `` chunk and the audio is all that follows
    the ``data`` chunk header.
    """
    if len(data) < 44 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise EspeakError("espeak-ng wrote no WAV audio")
    offset, rate = 12, 0
    while offset + 8 <= len(data):
        chunk_id, size = data[offset : offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
        if chunk_id == b"fmt ":
            channels, rate, _, _, width_bits = struct.unpack_from("<HIIHH", data, offset + 10)
            if channels != 1 or width_bits != 16:
                raise EspeakError(f"unexpected espeak-ng audio: {channels} ch, {width_bits} bit")
        elif chunk_id == b"data":
            pcm = data[offset + 8 :]
            return rate, pcm[: len(pcm) - len(pcm) % 2]
        offset += 8 + size
    raise EspeakError("espeak-ng's WAV has no data chunk")


class EspeakTts:
    """Speaks a sentence with eSpeak NG at its native 22050 Hz."""

    name = "espeak"
    device = "cpu"

    def __init__(self, options: EspeakOptions, app: Any = None) -> None:
        self.options = options
        self.program: str | None = None
        self.voice: EspeakVoice | None = None
        self.format = AudioFormat(rate=22050, width=2, channels=1)
        self.info: dict[str, Any] = {"engine": self.name, "device": "cpu"}

    def load(self) -> None:
        program = shutil.which(self.options.binary)
        if program is None:
            raise EspeakError(f"{self.options.binary} not found; {INSTALL_HINT}")
        self.program = program
        listing = self._run(["--voices"], b"", timeout=10.0).decode(errors="replace")
        voices = parse_voices(listing)
        self.voice = find_voice(voices, self.options.voice)
        if self.voice is None:
            known = sorted({v.language for v in voices})
            close = difflib.get_close_matches(self.options.voice.lower(), known, n=5, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise EspeakError(
                f"espeak-ng has no voice {self.options.voice!r}{hint} "
                f"({len(known)} languages: espeak-ng --voices)"
            )
        version = self._run(["--version"], b"", timeout=10.0).decode(errors="replace").split()
        self.info = {
            "engine": self.name,
            "device": "cpu",
            "voice": self.voice.name,
            "language": self.voice.language,
            "espeak_ng": version[3] if len(version) > 3 else "?",
        }
        chunk = self.synthesize("Ready.")  # warm-up: voice data into the page cache
        self.format = chunk.format
        log.info("espeak-ng voice %s (%s)", self.voice.name, self.voice.language)

    def synthesize(self, text: str) -> AudioChunk:
        """One sentence -> 16-bit mono PCM; the text goes on stdin, never into the arguments."""
        if not text or not text.strip():
            raise EspeakError("nothing to say: the text is empty")
        if self.program is None or self.voice is None:
            raise RuntimeError("espeak voice is not loaded: call load() first")
        o = self.options
        args = ["-v", self.voice.file, "-s", str(o.speed), "-p", str(o.pitch), "-g", str(o.gap_ms)]
        data = self._run(
            [*args, "--stdout"], text.encode("utf-8"), timeout=5.0 + SECONDS_PER_CHAR * len(text)
        )
        rate, pcm = wav_payload(data)
        return AudioChunk(pcm, AudioFormat(rate=rate, width=2, channels=1))

    def _run(self, args: list[str], stdin: bytes, timeout: float) -> bytes:
        if self.program is None:
            raise RuntimeError("espeak is not loaded: call load() first")
        try:
            done = subprocess.run(
                [self.program, *args], input=stdin, capture_output=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise EspeakError(f"espeak-ng gave no audio within {timeout:.0f} s") from None
        except OSError as exc:
            raise EspeakError(f"cannot run {self.program}: {exc}") from exc
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
            raise EspeakError(f"espeak-ng failed: {why}")
        return done.stdout

    def close(self) -> None:
        self.program = None


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "tts",
        "espeak",
        EspeakTts,
        options=EspeakOptions,
        shorthand="voice",
        description="eSpeak NG: any of its ~100 languages, offline, no model file",
    )
