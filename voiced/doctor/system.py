"""The host's Python, its packages, and PortAudio with the sound devices it sees."""

from __future__ import annotations

import importlib.metadata
import platform
import sys

from voiced.doctor.checks import Check

CORE_PACKAGES = (
    "voiced",
    "pluggy",
    "pydantic",
    "numpy",
    "ctranslate2",
    "faster-whisper",
    "onnxruntime",
    "piper-tts",
    "paho-mqtt",
    "sounddevice",
)
GPU_PACKAGES = ("torch", "torchaudio", "transformers", "onnxruntime-gpu", "onnxruntime-rocm")


def python_checks() -> list[Check]:
    """The Python version, the core packages and the GPU packages installed."""
    checks = []
    version = platform.python_version()
    ok = sys.version_info >= (3, 11)
    checks.append(
        Check(
            f"Python {version}",
            ok,
            sys.executable,
            "" if ok else "voiced needs Python 3.11 or newer",
            required=True,
            section="python",
        )
    )
    found, missing = [], []
    for name in CORE_PACKAGES:
        try:
            found.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    checks.append(
        Check(
            "packages",
            not missing,
            ", ".join(found) + (f"; missing: {', '.join(missing)}" if missing else ""),
            f"pip install {' '.join(missing)}" if missing else "",
            required=True,
            section="python",
        )
    )
    extras = []
    for name in GPU_PACKAGES:
        try:
            extras.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    checks.append(
        Check(
            "GPU packages", True, ", ".join(extras) or "none (CPU engines only)", section="python"
        )
    )
    return checks


def audio_checks(needs_audio: bool) -> list[Check]:
    """PortAudio and the sound devices it sees."""
    try:
        import sounddevice
    except OSError as exc:  # the Python package is there, libportaudio is not
        return [
            Check(
                "PortAudio",
                False if needs_audio else None,
                str(exc),
                "sudo apt install libportaudio2 (Fedora: portaudio)",
                required=needs_audio,
                section="audio",
            )
        ]
    except ImportError as exc:
        return [
            Check(
                "PortAudio",
                False if needs_audio else None,
                str(exc),
                "pip install sounddevice",
                required=needs_audio,
                section="audio",
            )
        ]
    checks = [Check("PortAudio", True, sounddevice.get_portaudio_version()[1], section="audio")]
    try:
        devices = list(sounddevice.query_devices())
    except Exception as exc:
        devices, error = [], str(exc)
    else:
        error = ""
    inputs = [d["name"] for d in devices if d.get("max_input_channels", 0) > 0]
    outputs = [d["name"] for d in devices if d.get("max_output_channels", 0) > 0]
    if inputs or outputs:
        checks.append(
            Check(
                "audio devices",
                True,
                f"{len(inputs)} input(s) "
                f"({', '.join(inputs[:3])}), {len(outputs)} output(s) "
                f"({', '.join(outputs[:3])})",
                section="audio",
            )
        )
    else:
        checks.append(
            Check(
                "audio devices",
                False if needs_audio else None,
                f"no sound devices{': ' + error if error else ''}",
                "a server without sound cards can still serve Wyoming satellites "
                "and files; for a microphone: check `arecord -l`, the audio group "
                "(sudo usermod -aG audio $USER), and that the service can reach "
                "/dev/snd",
                required=needs_audio,
                section="audio",
            )
        )
    return checks
