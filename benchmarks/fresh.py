"""Fresh evaluation sets: a new home, new commands and new conditions for every seed.

    python -m benchmarks.fresh --seed N [--seed M ...]

Each seed draws, with its own random generator and nothing else:

- a home: 5-7 areas on two floors and 13-17 devices from pools of area and device names
  (plain, brand-like and unusual ones: "Nanoleaf Panels", "Bubble Tube", "Yurt"), lights,
  switches, fans, covers, locks, media players and the weather;
- commands from Home Assistant's own templates (home-assistant-intents, as the hassil stage
  loads them), sampled at random over that home: a template of a common intent, its
  alternatives and optional words, a name of a device its ``requires_context`` allows, a
  number in its range; and as many as people say them (``SPOKEN``, area-less or not), some
  with a phrasing around them (politeness, fillers);
- chatter that names the home's own devices and areas, and files with no speech;
- a rendering for each: a voice of every local TTS engine (espeak-ng variants, the bundled
  Piper voice, flite and festival when installed) at 130-195 words a minute, pink noise at
  20 or 10 dB, reverberation, the telephone band (300-3400 Hz, 8 kHz files), a faster or
  slower tempo, 44.1 kHz stereo files.

The expected intent of a command is hassil's on its clean template text with the drawn home
(the stage as the daemon loads it); a phrase hassil reads as another intent, or as none, is
drawn again, and so is chatter hassil reads as a command. Files go to ``.bench/fresh-<seed>``
(rendered once; the manifest is rewritten each build). Seeds looked at while tuning are
tuning seeds: docs/benchmarks.md lists them; figures are reported on seeds never used so.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import random
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import CACHE, ensure_importable
from benchmarks.testset import RATE, available, pink_noise, speak

VERSION = 1
"""Bump when a draw or the rendering changes: every seed's set is then new."""
SAID_AS = {"1/2": "half"}  # a written form in Home Assistant's templates -> the spoken one
COMMANDS = 64
CHATTER = 12
NO_SPEECH = 4

AREAS = [
    "Kitchen", "Living Room", "Bedroom", "Office", "Hallway", "Garage", "Den", "Mudroom",
    "Conservatory", "Pantry", "Attic", "Basement", "Sunroom", "Nursery", "Guest Room", "Study",
    "Laundry Room", "Playroom", "Workshop", "Greenhouse", "Library", "Loft", "Patio", "Porch",
    "Man Cave", "Wine Cellar", "Boiler Room", "Yurt", "Snug", "Scullery", "Gym", "Studio",
]  # fmt: skip
FLOORS = [("Ground Floor", "First Floor"), ("Downstairs", "Upstairs"), ("Main Floor", "Loft Level")]
DEVICES: dict[str, list[str]] = {
    "light": [
        "Ceiling Light", "Floor Lamp", "Desk Lamp", "Chandelier", "Pendant", "Wall Sconce",
        "Nanoleaf Panels", "Hue Go", "Lava Lamp", "String Lights", "Led Strip", "Moon Lamp",
        "Govee Bar", "Tradfri Bulb", "Reading Light", "Salt Lamp", "Bubble Tube", "Spotlights",
        "Night Light", "Fairy Lights", "Wiz Bulb", "Arc Lamp",
    ],
    "switch": [
        "Kettle", "Espresso Machine", "Dehumidifier", "Heated Blanket", "Aquarium Pump",
        "Christmas Tree", "Towel Rail", "Shelly Relay", "Sonoff Plug", "Printer", "Fountain",
        "Waffle Iron", "Tado Boost", "Record Player",
    ],
    "fan": ["Dyson Fan", "Tower Fan", "Extractor Fan", "Ceiling Fan", "Box Fan"],
    "cover": ["Roller Blind", "Velux Window", "Garage Door", "Curtains", "Skylight", "Awning"],
    "lock": ["Front Door", "Nuki Lock", "Side Gate", "Back Door", "Shed Lock"],
    "media_player": ["Sonos", "Apple TV", "Chromecast", "Kitchen Speaker", "Roku", "Echo Dot"],
}  # fmt: skip
DEVICE_COUNTS = {"light": (5, 7), "switch": (3, 4), "fan": (1, 2), "cover": (1, 2),
                 "lock": (1, 2), "media_player": (1, 2)}  # fmt: skip
COVER_CLASSES = {"Garage Door": "garage", "Velux Window": "window", "Skylight": "window",
                 "Curtains": "curtain", "Awning": "awning"}  # fmt: skip
STATES = {"light": "off", "switch": "off", "fan": "off", "cover": "closed", "lock": "locked",
          "media_player": "playing"}  # fmt: skip

INTENTS = {
    "HassTurnOn": 14, "HassTurnOff": 12, "HassLightSet": 8, "HassGetState": 5,
    "HassSetPosition": 2, "HassMediaPause": 2, "HassMediaUnpause": 2, "HassMediaNext": 2,
    "HassSetVolume": 3, "HassStartTimer": 4, "HassCancelTimer": 2, "HassGetCurrentTime": 2,
    "HassGetCurrentDate": 1, "HassGetWeather": 2,
}  # fmt: skip
"""The intents commands are drawn from, and how often (a household's commands, roughly)."""
SPOKEN: dict[str, list[str]] = {
    "HassTurnOn": ["turn on the {light}", "switch on the {switch}", "turn the {area} lights on",
                   "turn on the {fan}", "lights on in the {area}", "open the {cover}",
                   "lock the {lock}", "turn on the lights in the {area}"],
    "HassTurnOff": ["turn off the {light}", "switch off the {switch}", "turn off the {fan}",
                    "turn the lights off in the {area}", "close the {cover}", "unlock the {lock}",
                    "turn off all the lights"],
    "HassLightSet": ["set the {light} to {n} percent", "make the {light} {color}",
                     "set the {area} lights to {n} percent", "turn the {light} {color}"],
    "HassGetState": ["is the {lock} locked", "is the {cover} open", "is the {light} on",
                     "is the {switch} on"],
    "HassSetPosition": ["set the {cover} to {n} percent", "open the {cover} to {n} percent"],
    "HassMediaPause": ["pause the {media}", "pause the music on the {media}"],
    "HassMediaUnpause": ["resume the {media}", "unpause the {media}"],
    "HassMediaNext": ["skip this song on the {media}", "next track on the {media}"],
    "HassSetVolume": ["set the {media} volume to {n} percent",
                      "set the volume of the {media} to {n}"],
    "HassStartTimer": ["set a timer for {small} minutes", "start a {small} minute timer",
                       "set a timer for {small} seconds"],
    "HassCancelTimer": ["cancel the timer", "stop my timer", "cancel my timer"],
    "HassGetCurrentTime": ["what time is it", "what's the time"],
    "HassGetCurrentDate": ["what's the date today", "what day is it today"],
    "HassGetWeather": ["what's the weather like", "what is the weather today"],
}  # fmt: skip
"""Commands as people say them, over the drawn home ({light}: one of its lights' names ...);
half the commands are drawn from these, half from Home Assistant's templates."""
COLORS = ["red", "blue", "green", "purple", "orange", "warm white", "pink", "yellow"]
DETERMINERS = {"the", "my", "our", "a", "an", "every", "each", "any", "your", "this"}
QUESTIONS = {"HassGetState", "HassGetCurrentTime", "HassGetCurrentDate", "HassGetWeather"}
FILLERS = ["hey, {}", "um, {}", "uh {}", "okay, {}", "so {}"]
"""Phrasings around a question (no "please", "could you ...")."""
PHRASINGS = [
    "please {}", "{} please", "could you {}", "can you {} please", "hey, {}", "um, {}",
    "uh {}", "okay, {}", "would you {}", "okay so {}",
]  # fmt: skip
NATURAL = 0.4
"""The share of SPOKEN commands said with a phrasing around them (HA's templates are often
telegraphic already: "could you Apple TV skip" is no one's phrasing)."""
CHATTER_LINES = [
    "the {device} has been acting up all week", "I bought a new {device} for the {area}",
    "did you clean the {area} yesterday", "my sister wants a {device} just like ours",
    "the {device} in the {area} is so loud", "we should move the {device} to the {area}",
    "remind me why we ever got the {device}", "I think the {device} needs new batteries",
    "the cat sleeps next to the {device} every night", "the {area} is freezing this morning",
    "who keeps leaving the {device} on", "turning on the {device} always cheers me up",
    "the {area} looks great since we painted it", "the {device} was cheaper than I expected",
    "tell me a story about dragons", "what did you have for lunch today",
    "let's watch a movie in the {area} tonight", "the instructions for the {device} are useless",
]  # fmt: skip

ESPEAK = ["en-us", "en-gb", "en-us+f3", "en-gb-scotland", "en-029", "en-us+m7", "en-gb-x-rp",
          "en-us+f4", "en-gb-x-gbclan", "en-us+m3", "en-gb-x-gbcwmd", "en-us+f2"]  # fmt: skip
ENGINES = {
    "espeak-ng": ESPEAK,
    "piper": ["piper"],
    "flite": ["flite:slt", "flite:rms", "flite:awb", "flite:kal"],
    "festival": ["festival"],
}


def folder(seed: int) -> Path:
    return CACHE / f"fresh-{seed}"


# -- the home ----------------------------------------------------------------------------------


def draw_home(rng: random.Random) -> dict[str, Any]:
    """A home (voiced's home format, docs/intents.md) of drawn areas, floors and devices."""
    lower, upper = rng.choice(FLOORS)
    floors = [{"name": lower, "id": "lower"}, {"name": upper, "id": "upper"}]
    areas = []
    for index, name in enumerate(rng.sample(AREAS, rng.randint(5, 7))):
        areas.append({"name": name, "id": _id(name), "floor": ("lower", "upper")[index % 2]})
    entities = []
    for domain, (least, most) in DEVICE_COUNTS.items():
        for name in rng.sample(DEVICES[domain], rng.randint(least, most)):
            area = rng.choice(areas)["id"]
            entity: dict[str, Any] = {"name": name, "id": f"{domain}.{_id(name)}",
                                      "area": area, "state": STATES[domain]}  # fmt: skip
            if domain == "cover":
                entity["attributes"] = {"device_class": COVER_CLASSES.get(name, "blind")}
            entities.append(entity)
    entities.append({"name": "Forecast", "id": "weather.forecast", "state": "sunny"})
    return {"floors": floors, "areas": areas, "entities": entities}


def _id(name: str) -> str:
    return name.lower().replace(" ", "_")


# -- commands from Home Assistant's templates ----------------------------------------------


class Sampler:
    """Random sentences of the hassil stage's templates over its home."""

    def __init__(self, stage: Any, rng: random.Random) -> None:
        self.stage = stage
        self.intents = stage.intents
        self.rng = rng

    def sentence(self, intent_name: str) -> str | None:
        """One random sentence of ``intent_name``'s templates (None: it drew a wildcard)."""
        intent = self.intents.intents[intent_name]
        data = self.rng.choice(intent.data)
        rules = {**self.intents.expansion_rules, **(data.expansion_rules or {})}
        lists = {**self.intents.slot_lists, **(data.slot_lists or {})}
        template = self.rng.choice(data.sentences)
        wanted = data.requires_context or {}
        text = self._expand(template.expression, lists, rules, wanted)
        return None if text is None else " ".join(text.split())

    def _expand(self, expression: Any, lists: dict, rules: dict, wanted: dict) -> str | None:
        from hassil.expression import (
            Alternative,
            ListReference,
            Permutation,
            RuleReference,
            Sequence,
            TextChunk,
        )

        if isinstance(expression, TextChunk):
            return expression.original_text
        if isinstance(expression, Alternative):
            return self._expand(self.rng.choice(expression.items), lists, rules, wanted)
        if isinstance(expression, Sequence | Permutation):
            items = list(expression.items)
            if isinstance(expression, Permutation):
                self.rng.shuffle(items)
            parts = [self._expand(item, lists, rules, wanted) for item in items]
            if any(part is None for part in parts):
                return None
            joiner = " " if isinstance(expression, Permutation) else ""
            return joiner.join(parts)  # type: ignore[arg-type]
        if isinstance(expression, RuleReference):
            return self._expand(rules[expression.rule_name].expression, lists, rules, wanted)
        if isinstance(expression, ListReference):
            return self._value(lists.get(expression.list_name), lists, rules, wanted)
        return None

    def _value(self, slot_list: Any, lists: dict, rules: dict, wanted: dict) -> str | None:
        from hassil.intents import RangeSlotList, TextSlotList

        if isinstance(slot_list, RangeSlotList):
            numbers = [n for n in slot_list.get_numbers() if float(n).is_integer()]
            return str(int(self.rng.choice(numbers))) if numbers else None
        if not isinstance(slot_list, TextSlotList) or not slot_list.values:
            return None  # a wildcard: no sentence to say
        values = [v for v in slot_list.values if _fits(v.context, wanted)] or slot_list.values
        return self._expand(self.rng.choice(values).text_in, lists, rules, wanted)


def _fits(context: dict[str, Any] | None, wanted: dict[str, Any]) -> bool:
    """Whether a name's context (its domain, device class) is one ``requires_context`` takes."""
    for key, allowed in wanted.items():
        if not context or key not in context:
            continue
        allowed = allowed if isinstance(allowed, list) else [allowed]
        if context[key] not in allowed:
            return False
    return True


def expected(stage: Any, text: str) -> dict[str, Any] | None:
    """hassil's intent of ``text`` as the benchmark judges it: name, slots, entities."""
    intent = stage.recognize(text)
    if intent is None:
        return None
    names = ("name", "area", "floor", "domain", "device_class")
    slots = {k: str(v) for k, v in intent.slots.items() if k not in names}
    return {"name": intent.name, "slots": slots, "entities": sorted(intent.data["entities"])}


def draw_commands(stage: Any, rng: random.Random, count: int) -> list[dict[str, Any]]:
    """``count`` commands: spoken text, its words without the phrasing, where they come from
    (``template``: Home Assistant's; ``spoken``: SPOKEN), the phrasing, the expected intent."""
    sampler = Sampler(stage, rng)
    names, weights = list(INTENTS), list(INTENTS.values())
    found: list[dict[str, Any]] = []
    said: set[str] = set()
    for _ in range(count * 80):
        if len(found) == count:
            return found
        name = rng.choices(names, weights)[0]
        source = rng.choice(["template", "spoken"])
        text = sampler.sentence(name) if source == "template" else spoken(name, stage.home, rng)
        text = text and said_as(text)
        if not text or text.casefold() in said or not natural(text):
            continue
        intent = expected(stage, text)
        device = name not in ("HassStartTimer", "HassCancelTimer", "HassGetCurrentTime",
                              "HassGetCurrentDate")  # fmt: skip
        if intent is None or intent["name"] != name or (device and not intent["entities"]):
            continue
        said.add(text.casefold())
        phrasing = "{}"
        if source == "spoken" and rng.random() < NATURAL:
            phrasing = rng.choice(FILLERS if name in QUESTIONS else PHRASINGS)
        found.append({"text": phrasing.format(text), "template_text": text, "source": source,
                      "phrasing": phrasing, "expected": intent})  # fmt: skip
    raise RuntimeError(f"drew {len(found)} of {count} commands: the templates ran dry")


def said_as(text: str) -> str:
    """A template's written forms as a person says them: "1/2" is "half" (a voice reads the
    written form "one slash two", which no one says to a home)."""
    return " ".join(SAID_AS.get(word, word) for word in text.split())


def natural(text: str) -> bool:
    """Whether a template's sample reads as something said: no two determiners in a row
    ("every the Downstairs floor", "lock all the gate our Nursery"), "all the" aside."""
    words = text.casefold().split()
    for before, word in itertools.pairwise(words):
        if word in DETERMINERS and (before in DETERMINERS or (before == "all" and word != "the")):
            return False
    return True


def spoken(intent: str, home: Any, rng: random.Random) -> str:
    """A SPOKEN pattern of ``intent`` over ``home`` (a voiced Home)."""
    by_domain: dict[str, list[str]] = {}
    for entity in home.entities:
        by_domain.setdefault(entity.domain, []).append(entity.name.lower())
    fill = {
        "light": by_domain.get("light"), "switch": by_domain.get("switch"),
        "fan": by_domain.get("fan"), "cover": by_domain.get("cover"),
        "lock": by_domain.get("lock"), "media": by_domain.get("media_player"),
        "area": [a.name.lower() for a in home.areas],
    }  # fmt: skip
    pattern = rng.choice(SPOKEN[intent])
    values = {k: rng.choice(v) for k, v in fill.items() if v}
    values |= {"n": str(rng.choice(range(10, 100, 5))), "small": str(rng.randint(2, 30)),
               "color": rng.choice(COLORS)}  # fmt: skip
    try:
        return pattern.format(**values)
    except KeyError:  # this home has none of that device
        return ""


def draw_chatter(stage: Any, home: dict[str, Any], rng: random.Random, count: int) -> list[str]:
    """Sentences about the home's own devices and areas that hassil reads as no command."""
    devices = [e["name"].lower() for e in home["entities"] if e["id"] != "weather.forecast"]
    areas = [a["name"].lower() for a in home["areas"]]
    lines: list[str] = []
    for line in rng.sample(CHATTER_LINES, len(CHATTER_LINES)):
        text = line.format(device=rng.choice(devices), area=rng.choice(areas))
        if stage.recognize(text) is None:
            lines.append(text)
        if len(lines) == count:
            return lines
    raise RuntimeError(f"only {len(lines)} chatter lines are no command here")


# -- the rendering -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Condition:
    """How one file is spoken and recorded."""

    voice: str
    speed: int = 160
    snr_db: float | None = None
    reverb_s: float = 0.0
    """RT60 of a synthetic room (0: none)."""
    telephone: bool = False
    tempo: float = 1.0
    """> 1 faster (tempo and pitch together)."""
    rate: int = RATE
    channels: int = 1
    lead_s: float = 0.3
    trail_s: float = 0.7

    def key(self, text: str) -> str:
        raw = json.dumps([VERSION, text, asdict(self)], sort_keys=True)
        return hashlib.sha1(raw.encode()).hexdigest()[:10]


def voices() -> dict[str, list[str]]:
    """Every local TTS engine's voices (an engine not installed is left out)."""
    return {e: v for e, v in ENGINES.items() if available(v[0])}


def engine_of(voice: str) -> str:
    """The TTS engine of one of ENGINES' voices."""
    return next(engine for engine, names in ENGINES.items() if voice in names)


def draw_condition(rng: random.Random, engines: dict[str, list[str]]) -> Condition:
    engine = rng.choice(sorted(engines))
    telephone = rng.random() < 0.2
    stereo = not telephone and rng.random() < 0.15
    return Condition(
        voice=rng.choice(engines[engine]),
        speed=rng.choice([130, 145, 160, 175, 195]),
        snr_db=rng.choice([None, None, 20.0, 10.0]),
        reverb_s=round(rng.uniform(0.3, 0.7), 2) if rng.random() < 0.25 else 0.0,
        telephone=telephone,
        tempo=round(rng.uniform(0.88, 1.15), 2) if rng.random() < 0.25 else 1.0,
        rate=8000 if telephone else 44100 if stereo else RATE,
        channels=2 if stereo else 1,
        lead_s=round(rng.uniform(0.2, 0.6), 2),
    )


def reverberate(speech: np.ndarray, rt60: float, seed: int) -> np.ndarray:
    """``speech`` in a room: convolved with exponentially decaying noise (RT60 ``rt60``)."""
    rng = np.random.default_rng(seed)
    n = int(rt60 * RATE)
    t = np.arange(n) / RATE
    impulse = rng.standard_normal(n) * np.exp(-6.9 * t / rt60)
    impulse[0] = 1.0 / 0.3  # the direct sound leads
    size = len(speech) + n - 1
    wet = np.fft.irfft(np.fft.rfft(speech, size) * np.fft.rfft(impulse, size), size)
    return (wet / (np.max(np.abs(wet)) or 1.0) * 0.5).astype(np.float32)


def telephone_band(signal: np.ndarray) -> np.ndarray:
    """Only 300-3400 Hz of ``signal`` (16 kHz)."""
    spectrum = np.fft.rfft(signal)
    freqs = np.fft.rfftfreq(len(signal), 1 / RATE)
    spectrum[(freqs < 300) | (freqs > 3400)] = 0
    return np.fft.irfft(spectrum, len(signal)).astype(np.float32)


def render(text: str, condition: Condition, seed: int) -> np.ndarray:
    """The spoken ``text`` under ``condition`` -> float32 (frames, channels) at its rate."""
    from voiced.audio import resample

    speech = speak(text, condition.voice, condition.speed) if text else np.zeros(0, np.float32)
    speech = speech / (np.max(np.abs(speech), initial=0.0) or 1.0) * 0.5
    loud = np.flatnonzero(np.abs(speech) > 0.01)
    if len(loud):
        speech = speech[loud[0] : loud[-1] + 1]
    if condition.tempo != 1.0 and len(speech):
        speech = resample(speech, int(RATE * condition.tempo), RATE)
    if condition.reverb_s and len(speech):
        speech = reverberate(speech, condition.reverb_s, seed)
    lead = np.zeros(int(condition.lead_s * RATE), np.float32)
    signal = np.concatenate([lead, speech, np.zeros(int(condition.trail_s * RATE), np.float32)])
    if condition.snr_db is not None:
        active = speech[np.abs(speech) > 0.01]
        level = float(np.sqrt(np.mean(active**2))) if len(active) else 0.1
        signal = signal + pink_noise(len(signal), seed) * level / 10 ** (condition.snr_db / 20)
    if condition.telephone:
        signal = telephone_band(signal)
    signal = np.clip(resample(signal.astype(np.float32), RATE, condition.rate), -1.0, 1.0)
    channels = [signal * (1.0 if c == 0 else 0.8) for c in range(condition.channels)]
    return np.stack(channels, 1).astype(np.float32)


# -- the set -----------------------------------------------------------------------------------


def draw(seed: int, stage_factory: Any = None) -> dict[str, Any]:
    """The seed's home, jobs and conditions (no audio): the manifest less its file names."""
    rng = random.Random(f"voiced-fresh-{VERSION}-{seed}")
    home = draw_home(rng)
    stage = (stage_factory or hassil_stage)(home)
    jobs = [{"kind": "command", **c} for c in draw_commands(stage, rng, COMMANDS)]
    jobs += [{"kind": "chatter", "text": t, "expected": None}
             for t in draw_chatter(stage, home, rng, CHATTER)]  # fmt: skip
    jobs += [{"kind": "no-speech", "text": "", "expected": None}] * NO_SPEECH
    rng.shuffle(jobs)
    engines = voices()
    items = []
    for index, job in enumerate(jobs):
        condition = draw_condition(rng, engines)
        if job["kind"] == "no-speech":  # silence, or pink noise at a level
            level = rng.choice([None, 30.0, 20.0, 10.0])
            condition = Condition("none", snr_db=level, lead_s=1.0, trail_s=1.0)
        items.append({**job, **asdict(condition), "index": index})
    return {"version": VERSION, "seed": seed, "home": home, "items": items,
            "voices": engines}  # fmt: skip


def hassil_stage(home: dict[str, Any]) -> Any:
    """The hassil stage as the daemon loads it (no custom sentences) on ``home``."""
    ensure_importable()
    from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

    stage = HassilIntent(HassilOptions(home="", sentences=[]))
    stage.load()
    stage.use_home(home)
    return stage


def build(seed: int, out: Path | None = None) -> dict[str, Any]:
    """Draw the seed's set, render its files (once) and write ``manifest.json``."""
    import soundfile

    out = out or folder(seed)
    out.mkdir(parents=True, exist_ok=True)
    manifest = draw(seed)
    for item in manifest["items"]:
        fields = {k: item[k] for k in Condition.__dataclass_fields__}
        condition = Condition(**fields)
        voice = condition.voice.replace(":", "_").replace("+", "_")
        name = f"{item['index']:03d}-{item['kind']}-{voice}-{condition.key(item['text'])}.wav"
        if not (out / name).is_file():
            frames = render(item["text"], condition, seed=seed * 1000 + item["index"])
            soundfile.write(str(out / name), frames, condition.rate, subtype="PCM_16")
        item["file"] = name
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, action="append", required=True)
    args = parser.parse_args(argv)
    for seed in args.seed:
        manifest = build(seed)
        kinds = [i["kind"] for i in manifest["items"]]
        print(f"seed {seed}: {folder(seed)}: {kinds.count('command')} commands, "
              f"{kinds.count('chatter')} chatter, {kinds.count('no-speech')} without speech; "
              f"voices of {', '.join(manifest['voices'])}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
