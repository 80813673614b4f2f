"""Enrolling a voice: checks that each clip is one person speaking a sentence, and that the
clips are the same person, before anything is stored.

Each check is a clear ``EnrollmentError`` naming the clip and what to do: too short,
silence, noise without a voice, too little speech, two voices in one clip, or a clip that
does not sound like the others. Thresholds: ``benchmarks/speakers.py`` chooses them on its
tuning split.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from voiced.audio import PCM_BYTES_PER_SECOND
from voiced.stages import NoVoice, SpeakerEncoder, VoicePrint

CLIPS = 3
MIN_CLIP_SECONDS = 2.0  # a sentence; a 1-second clip says too little of a voice
MIN_SPEECH_SECONDS = 1.2  # speech left once the encoder trimmed silences
SILENCE_DBFS = -55.0  # quieter than this overall: nothing was recorded
MIN_VOICED_FRACTION = 0.2  # of the loud frames, those with a pitch (voice); noise has ~none
TWO_VOICES_FLOOR = 0.63  # two parts of one clip less alike than this: two voices

SENTENCES = (
    "Turn on the lights in the kitchen and set the heating to twenty one degrees.",
    "What is the weather going to be like tomorrow morning?",
    "Remind me to call my sister when I get home this evening.",
)
"""What the guided enrollment asks a person to say (one clip each)."""


class EnrollmentError(ValueError):
    """A clip or a set of clips that cannot enroll a voice; the message says what to do."""


@dataclass(frozen=True)
class Clip:
    """One recording offered for enrollment: where it came from, and its audio (pipeline
    format). Never stored."""

    label: str
    audio: bytes


def level_dbfs(samples: np.ndarray) -> float:
    rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2))) if samples.size else 0.0
    return 20 * np.log10(rms) if rms > 0 else -120.0


def voiced_fraction(samples: np.ndarray, rate: int = 16000) -> float:
    """Of the loud 32 ms frames, the share with a clear pitch between 62 and 400 Hz
    (normalized autocorrelation above 0.45): high for speech, near zero for noise."""
    size, hop = rate * 32 // 1000, rate * 16 // 1000
    if len(samples) < size:
        return 0.0
    count = 1 + (len(samples) - size) // hop
    frames = np.lib.stride_tricks.sliding_window_view(samples, size)[::hop][:count]
    frames = frames - frames.mean(axis=1, keepdims=True)
    energy = np.sqrt(np.mean(frames**2, axis=1))
    loud = frames[energy > max(energy.max() * 10 ** (-30 / 20), 10 ** (-50 / 20))]
    if not len(loud):
        return 0.0
    spectrum = np.fft.rfft(loud, n=2 * size, axis=1)
    autocorr = np.fft.irfft(np.abs(spectrum) ** 2, axis=1)[:, :size]
    lags = slice(rate // 400, rate // 62)
    peaks = autocorr[:, lags].max(axis=1) / np.maximum(autocorr[:, 0], 1e-12)
    return float(np.mean(peaks > 0.45))


def check_clip(clip: Clip, encoder: SpeakerEncoder) -> VoicePrint:
    """The clip's voice print, or an ``EnrollmentError`` saying what is wrong with it."""
    seconds = len(clip.audio) / PCM_BYTES_PER_SECOND
    if seconds < MIN_CLIP_SECONDS:
        raise EnrollmentError(
            f"{clip.label}: {seconds:.1f} s is too short to learn a voice: say a whole "
            f"sentence (at least {MIN_CLIP_SECONDS:g} s)"
        )
    samples = np.frombuffer(clip.audio, dtype="<i2").astype(np.float32) / 32768.0
    level = level_dbfs(samples)
    if level < SILENCE_DBFS:
        raise EnrollmentError(
            f"{clip.label}: silence ({level:.0f} dBFS): nothing was heard; check the "
            "microphone and speak closer to it"
        )
    voiced = voiced_fraction(samples)
    if voiced < MIN_VOICED_FRACTION:
        raise EnrollmentError(
            f"{clip.label}: no voice in it, only noise ({voiced:.0%} of the sound has a "
            "pitch): speak a sentence in a quiet room"
        )
    try:
        voice = encoder.embed(clip.audio)
    except NoVoice as exc:
        raise EnrollmentError(f"{clip.label}: {exc}: speak a whole sentence") from None
    if voice.speech_seconds < MIN_SPEECH_SECONDS:
        raise EnrollmentError(
            f"{clip.label}: only {voice.speech_seconds:.1f} s of speech: say a longer "
            f"sentence (at least {MIN_SPEECH_SECONDS:g} s of speech)"
        )
    agreement = part_agreement(voice)
    if agreement < TWO_VOICES_FLOOR:
        raise EnrollmentError(
            f"{clip.label}: sounds like more than one voice (two parts of it are only "
            f"{agreement:.2f} alike): record one person at a time"
        )
    return voice


def part_agreement(voice: VoicePrint) -> float:
    """How alike the least alike two parts of an utterance are (1.0 with a single part)."""
    parts = np.asarray(voice.parts, dtype=np.float32)
    if len(parts) < 2:
        return 1.0
    return float((parts @ parts.T).min())


def check_same_voice(clips: list[Clip], voices: list[VoicePrint], floor: float) -> None:
    """Each clip must sound like the others together: at least ``floor`` similar (what names
    a lone enrolled voice: ``MatchRule.alone + threshold``)."""
    vectors = [np.asarray(v.vector, dtype=np.float32) for v in voices]
    for i, clip in enumerate(clips):
        others = np.mean([v for j, v in enumerate(vectors) if j != i], axis=0)
        score = float(vectors[i] @ (others / np.linalg.norm(others)))
        if score < floor:
            raise EnrollmentError(
                f"{clip.label} does not sound like the other clips (similarity {score:.2f}, "
                f"below {floor:.2f}): are they all the same person?"
            )


def voice_of(clips: list[Clip], encoder: SpeakerEncoder, floor: float) -> list[VoicePrint]:
    """Check every clip and that they are one voice; their voice prints to enroll."""
    if len(clips) < CLIPS:
        raise EnrollmentError(f"enrolling needs {CLIPS} clips (sentences), got {len(clips)}")
    voices = [check_clip(clip, encoder) for clip in clips]
    if len({v.model for v in voices}) != 1:
        raise EnrollmentError("the clips were embedded by different encoders")
    check_same_voice(clips, voices, floor)
    return voices
