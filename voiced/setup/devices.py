"""Microphones and speakers (PortAudio through ``sounddevice``), and a short recording.

The recording is read through a callback with a deadline, so a device that delivers nothing
is an error after a few seconds, not a hang.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from voiced.audio import AudioFormat, StreamConverter
from voiced.setup.console import SetupError

PIPELINE_RATE = 16000


@dataclass(frozen=True)
class Device:
    """One PortAudio device as setup shows it."""

    index: int
    name: str
    inputs: int
    outputs: int
    rate: int
    default_input: bool = False
    default_output: bool = False


def portaudio() -> Any:
    try:
        import sounddevice
    except OSError as exc:  # the PortAudio library itself is missing
        raise SetupError(f"PortAudio is not available ({exc}): apt install libportaudio2") from None
    return sounddevice


def audio_devices() -> list[Device]:
    """Every device PortAudio sees, with the system's defaults marked."""
    sd = portaudio()
    default_in, default_out = sd.default.device
    return [
        Device(
            index,
            str(d["name"]),
            int(d["max_input_channels"]),
            int(d["max_output_channels"]),
            int(d["default_samplerate"]),
            index == default_in,
            index == default_out,
        )
        for index, d in enumerate(sd.query_devices())
    ]


def describe(devices: list[Device], kind: str) -> list[str]:
    """Lines for a list of microphones (``kind`` "input") or speakers ("output")."""
    lines = []
    for d in devices:
        default = d.default_input if kind == "input" else d.default_output
        mark = " (default)" if default else ""
        lines.append(f"{d.index:>3}: {d.name}{mark}")
    return lines


def usable(devices: list[Device], kind: str) -> list[Device]:
    return [d for d in devices if (d.inputs if kind == "input" else d.outputs) > 0]


def pick(devices: list[Device], answer: str, kind: str) -> Device:
    """The device an answer names: its index, its exact name, or a part of its name."""
    candidates = usable(devices, kind)
    word = "microphone" if kind == "input" else "speaker"
    if not candidates:
        raise SetupError(
            f"no {word} found (is the user in the 'audio' group? is the device plugged in?)"
        )
    text = answer.strip()
    if text.isdigit():
        found = [d for d in candidates if d.index == int(text)]
    else:
        found = [d for d in candidates if d.name.lower() == text.lower()]
        found = found or [d for d in candidates if text.lower() in d.name.lower()]
    if not found:
        names = "; ".join(describe(candidates, kind)).replace("  ", " ")
        raise SetupError(f"no {word} matches {answer!r}; found: {names}")
    return found[0]


def default_of(devices: list[Device], kind: str) -> Device | None:
    candidates = usable(devices, kind)
    marked = [d for d in candidates if (d.default_input if kind == "input" else d.default_output)]
    return (marked or candidates or [None])[0]


def record(device: Device, seconds: float, timeout: float | None = None) -> bytes:
    """``seconds`` of the microphone as 16 kHz mono 16-bit PCM; SetupError when the device
    cannot be opened or delivers less than that within ``timeout``."""
    sd = portaudio()
    rate = device.rate or PIPELINE_RATE
    wanted = int(seconds * rate)
    blocks: list[bytes] = []
    got = [0]
    done = threading.Event()

    def callback(indata: Any, frames: int, when: Any, status: Any) -> None:
        if got[0] < wanted:
            blocks.append(bytes(indata))
            got[0] += frames
        if got[0] >= wanted:
            done.set()

    try:
        stream = sd.RawInputStream(
            device=device.index, samplerate=rate, channels=1, dtype="int16", callback=callback
        )
    except Exception as exc:  # PortAudioError and friends
        raise SetupError(f"cannot open the microphone {device.name!r}: {exc}") from None
    with stream:
        finished = done.wait(timeout or seconds + 5.0)
    if not finished:
        raise SetupError(
            f"the microphone {device.name!r} delivered {got[0] / rate:.1f} s of "
            f"{seconds:.0f} s: is it muted or used by another program?"
        )
    pcm = b"".join(blocks)[: wanted * 2]
    return StreamConverter(AudioFormat(rate, 2, 1), AudioFormat(PIPELINE_RATE, 2, 1)).convert(
        pcm, last=True
    )


def level_dbfs(pcm: bytes) -> tuple[float, float]:
    """(RMS, peak) of 16-bit PCM in dBFS; -inf for digital silence."""
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64) / 32768.0
    if not len(samples):
        return -math.inf, -math.inf
    rms = math.sqrt(float(np.mean(samples**2)))
    peak = float(np.max(np.abs(samples)))
    return (
        20 * math.log10(rms) if rms else -math.inf,
        20 * math.log10(peak) if peak else -math.inf,
    )


def level_verdict(rms_dbfs: float) -> str | None:
    """What is wrong with a recording's level, or None when speech can be heard in it."""
    if rms_dbfs == -math.inf:
        return "pure digital silence: the microphone is muted or not connected"
    if rms_dbfs < -60:
        return "very quiet: raise the capture volume (alsamixer) or move closer"
    if rms_dbfs > -3:
        return "clipping: lower the capture volume"
    return None
