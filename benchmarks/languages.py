"""Languages: a German and a Mandarin household, voiced beside its peer on the same audio.

    python -m benchmarks.languages [--quick] [--languages de,zh-CN] [--homes floors,small]
                                   [--rates 2] [--no-noise] [--half report] [--json FILE]

Each language has two homes: its household on two floors (tests/homes/haus_de.yaml,
jia_zh.yaml: 4 rooms, 11 devices named in the language) with 25 everyday commands and 8
chatter sentences, and the small three-language home (tests/homes/multilingual.yaml, no
floors) with 10 commands. Every sentence is spoken by espeak-ng (the only German and Mandarin
voices a package here bundles) at two rates, clean and with white noise at 10 dB SNR.
Both sides run Whisper base (``bundled:base``, CTranslate2 int8, 2 threads):

- voiced: the ``whisper-ctranslate2`` stage pinned to the language, the hassil stage of that
  language asked by its recognizer (N-best choice, rescoring, the constrained search), then
  that stage's ``recognize`` (wording, skip words, repair, sound);
- the peer: faster-whisper's own ``transcribe`` (beam 5, its defaults) told the language, and
  raw ``hassil.recognize_best`` on home-assistant-intents' sentences with the same home.

A command counts as right when its intent's name and its area/name/floor slots are the
expected ones; a chatter sentence that gives any intent is a false activation. Sentences
alternate between two halves (even positions: ``tuning``, odd: ``report``): a constant may
only be chosen on the tuning half, and the report half is what the figures claim.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from benchmarks.common import ROOT, Row, Section, ensure_importable, machine
from benchmarks.language_error import error_rate

HOMES = ROOT / "tests" / "homes"
THREADS = 2
NOISE_SNR_DB = 10.0
HALVES = ("tuning", "report")


@dataclass(frozen=True)
class Command:
    """A sentence and what it asks for (``intent`` None: chatter, which asks for nothing)."""

    text: str
    intent: str | None
    slots: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Home:
    name: str
    path: Path
    commands: tuple[Command, ...]
    chatter: tuple[Command, ...] = ()


@dataclass(frozen=True)
class Language:
    tag: str
    name: str
    voice: str
    rates: tuple[int, int]
    gap: int
    homes: tuple[Home, ...]


def _c(text: str, intent: str, **slots: str) -> Command:
    return Command(text, intent, slots)


def _chatter(*texts: str) -> tuple[Command, ...]:
    return tuple(Command(text, None) for text in texts)


GERMAN_FLOORS = Home("floors", HOMES / "haus_de.yaml", (
    _c("Schalte das Licht in der Küche ein.", "HassTurnOn", area="Küche"),
    _c("Schalte die Kaffeemaschine aus.", "HassTurnOff", name="Kaffeemaschine"),
    _c("Mach die Stehlampe an.", "HassTurnOn", name="Stehlampe"),
    _c("Schalte das Licht im Obergeschoss aus.", "HassTurnOff", floor="Obergeschoss"),
    _c("Wie spät ist es?", "HassGetCurrentTime"),
    _c("Welcher Tag ist heute?", "HassGetCurrentDate"),
    _c("Stelle einen Timer für fünf Minuten.", "HassStartTimer", minutes="5"),
    _c("Brich den Timer ab.", "HassCancelTimer"),
    _c("Schalte den Ventilator ein.", "HassTurnOn", name="Ventilator"),
    _c("Öffne den Rollladen.", "HassTurnOn", name="Rollladen"),
    _c("Schließe die Haustür ab.", "HassTurnOn", name="Haustür"),
    _c("Wie warm ist es im Wohnzimmer?", "HassClimateGetTemperature", area="Wohnzimmer"),
    _c("Stelle die Temperatur im Wohnzimmer auf zweiundzwanzig Grad.",
       "HassClimateSetTemperature", area="Wohnzimmer", temperature="22"),
    _c("Dimme die Deckenlampe auf fünfzig Prozent.", "HassLightSet", name="Deckenlampe",
       brightness="50"),
    _c("Pausiere den Fernseher.", "HassMediaPause", name="Fernseher"),
    _c("Ist die Haustür abgeschlossen?", "HassGetState", name="Haustür", state="locked"),
    _c("Schalte das Licht im Kinderzimmer ein.", "HassTurnOn", area="Kinderzimmer"),
    _c("Mach das Licht im Schlafzimmer aus.", "HassTurnOff", area="Schlafzimmer"),
    _c("Mach den Ventilator aus.", "HassTurnOff", name="Ventilator"),
    _c("Stelle einen Timer für zehn Minuten.", "HassStartTimer", minutes="10"),
    _c("Schalte den Fernseher aus.", "HassTurnOff", name="Fernseher"),
    _c("Mach den Rollladen zu.", "HassTurnOff", name="Rollladen"),
    _c("Schalte die Nachttischlampe ein.", "HassTurnOn", name="Nachttischlampe"),
    _c("Welches Datum haben wir heute?", "HassGetCurrentDate"),
    _c("Schalte das Licht im Erdgeschoss ein.", "HassTurnOn", floor="Erdgeschoss"),
), _chatter(
    "Ich habe heute keine Lust zu kochen.",
    "Das Wetter war gestern wirklich schön.",
    "Wir fahren morgen zu Oma.",
    "Der Film im Fernsehen war langweilig.",
    "Das Licht der Sonne ist heute sehr hell.",
    "Hast du die Hausaufgaben schon gemacht?",
    "Ich trinke gerne Kaffee am Morgen.",
    "Wo habe ich nur meine Schlüssel hingelegt?",
))  # fmt: skip
GERMAN_SMALL = Home("small", HOMES / "multilingual.yaml", (
    _c("Schalte das Licht in der Küche ein.", "HassTurnOn", area="Küche"),
    _c("Schalte das Licht im Schlafzimmer aus.", "HassTurnOff", area="Schlafzimmer"),
    _c("Mach das Licht in der Küche aus.", "HassTurnOff", area="Küche"),
    _c("Schalte den Ventilator ein.", "HassTurnOn", name="Ventilator"),
    _c("Wie spät ist es?", "HassGetCurrentTime"),
    _c("Stelle einen Timer für fünf Minuten.", "HassStartTimer", minutes="5"),
    _c("Welcher Tag ist heute?", "HassGetCurrentDate"),
    _c("Mach das Licht im Schlafzimmer an.", "HassTurnOn", area="Schlafzimmer"),
    _c("Schalte den Ventilator aus.", "HassTurnOff", name="Ventilator"),
    _c("Welches Datum haben wir heute?", "HassGetCurrentDate"),
))  # fmt: skip
MANDARIN_FLOORS = Home("floors", HOMES / "jia_zh.yaml", (
    _c("打开厨房的灯。", "HassTurnOn", area="厨房"),
    _c("关闭卧室的灯。", "HassTurnOff", area="卧室"),
    _c("打开咖啡机。", "HassTurnOn", name="咖啡机"),
    _c("关闭咖啡机。", "HassTurnOff", name="咖啡机"),
    _c("现在几点了？", "HassGetCurrentTime"),
    _c("今天几号？", "HassGetCurrentDate"),
    _c("设置十分钟的计时器。", "HassStartTimer", minutes="10"),
    _c("取消计时器。", "HassCancelTimer"),
    _c("打开风扇。", "HassTurnOn", name="风扇"),
    _c("把客厅的窗帘关上。", "HassTurnOff", name="窗帘"),
    _c("打开台灯。", "HassTurnOn", name="台灯"),
    _c("关掉电视。", "HassTurnOff", name="电视"),
    _c("客厅温度调到二十二度。", "HassClimateSetTemperature", area="客厅", temperature="22"),
    _c("客厅现在多少度？", "HassClimateGetTemperature", area="客厅"),
    _c("把台灯亮度调到五十。", "HassLightSet", name="台灯", brightness="50"),
    _c("暂停电视。", "HassMediaPause", name="电视"),
    _c("打开儿童房的灯。", "HassTurnOn", area="儿童房"),
    _c("关闭厨房的灯。", "HassTurnOff", area="厨房"),
    _c("把风扇关掉。", "HassTurnOff", name="风扇"),
    _c("设置五分钟的计时器。", "HassStartTimer", minutes="5"),
    _c("打开吊灯。", "HassTurnOn", name="吊灯"),
    _c("打开窗帘。", "HassTurnOn", name="窗帘"),
    _c("关掉落地灯。", "HassTurnOff", name="落地灯"),
    _c("现在几点钟？", "HassGetCurrentTime"),
    _c("锁上门锁。", "HassTurnOn", name="门锁"),
), _chatter(
    "我昨天去超市买了很多水果。",
    "这部电影真的很好看。",
    "明天我们去公园散步吧。",
    "你今天吃午饭了吗？",
    "厨房里的饭菜很香。",
    "我的手机快没电了。",
    "周末我想去看望爷爷奶奶。",
    "这本书我已经读完了。",
))  # fmt: skip
MANDARIN_SMALL = Home("small", HOMES / "multilingual.yaml", (
    _c("打开厨房的灯。", "HassTurnOn", area="厨房"),
    _c("关闭卧室的灯。", "HassTurnOff", area="卧室"),
    _c("把厨房的灯打开。", "HassTurnOn", area="厨房"),
    _c("关闭厨房的灯。", "HassTurnOff", area="厨房"),
    _c("现在几点了？", "HassGetCurrentTime"),
    _c("今天几号？", "HassGetCurrentDate"),
    _c("打开卧室的灯。", "HassTurnOn", area="卧室"),
    _c("把卧室的灯关掉。", "HassTurnOff", area="卧室"),
    _c("打开卧室的风扇。", "HassTurnOn", area="卧室"),
    _c("现在几点钟？", "HassGetCurrentTime"),
))  # fmt: skip
GERMAN = Language("de", "German", "de", (145, 175), 3, (GERMAN_FLOORS, GERMAN_SMALL))
MANDARIN = Language(
    "zh-CN", "Mandarin", "cmn-latn-pinyin", (130, 160), 0, (MANDARIN_FLOORS, MANDARIN_SMALL)
)
LANGUAGES = (GERMAN, MANDARIN)


def speak(text: str, language: Language, rate: int | None = None) -> bytes:
    """espeak-ng -> 16 kHz PCM with 0.3 s of silence before and 0.7 s after (as VAD cuts)."""
    from voiced.audio import read_pipeline_audio

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "said.wav"
        subprocess.run(
            ["espeak-ng", "-v", language.voice, "-s", str(rate or language.rates[0]),
             "-g", str(language.gap), "-w", str(out), text],
            check=True, capture_output=True,
        )  # fmt: skip
        pcm = read_pipeline_audio(out)
    return b"\0\0" * 4800 + pcm + b"\0\0" * 11200


def with_noise(pcm: bytes, snr_db: float, seed: int) -> bytes:
    """White noise at ``snr_db`` below the speech's level (RMS of the non-silent samples),
    the same noise for the same ``seed``."""
    samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float64)
    speech = samples[np.abs(samples) > 0]
    level = float(np.sqrt(np.mean(speech**2))) if speech.size else 1000.0
    noise = np.random.default_rng(seed).normal(0.0, level / 10 ** (snr_db / 20), samples.size)
    return np.clip(samples + noise, -32768, 32767).astype(np.int16).tobytes()


def right(found: tuple[str, dict[str, Any]] | None, command: Command) -> bool:
    """A command: the intent's name and its slots (area, name, floor, and the numbers and
    state it asks for: a timer's minutes, a temperature) are the expected ones. Chatter: no
    intent at all."""
    if command.intent is None:
        return found is None
    if found is None or found[0] != command.intent:
        return False
    return all(_same(found[1].get(k), v) for k, v in command.slots.items())


def _same(value: Any, expected: str) -> bool:
    """A slot's value is the expected one: as numbers where both are (10.0 is 10)."""
    try:
        return float(value) == float(expected)
    except (TypeError, ValueError):
        return str(value) == expected


@dataclass(frozen=True)
class Condition:
    rate: int
    noise: bool

    @property
    def label(self) -> str:
        return f"{self.rate} wpm {'noise' if self.noise else 'clean'}"


@dataclass
class Sides:
    """voiced and its peer, loaded once."""

    engine: Any
    direct: Any
    app: Any


def _load(languages: list[Language]) -> Sides:
    from faster_whisper import WhisperModel
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
    from voiced_plugins.asr_whisper.models import bundled_ct2_dir

    from voiced.config import Settings

    tags = [lang.tag for lang in languages]
    sites = {f"s{i}": {"language": t} for i, t in enumerate(tags)}
    settings = Settings(language=tags[0], sites=sites)
    app = SimpleNamespace(settings=settings, grammar=None)
    app.stage = lambda kind, name=None: app.grammar if kind == "intent" else None
    engine = WhisperCt2Asr(WhisperCt2Options(model="bundled:base", cpu_threads=THREADS), app)
    engine.load()
    direct = WhisperModel(
        str(bundled_ct2_dir("base")), device="cpu", compute_type="int8", cpu_threads=THREADS
    )
    return Sides(engine, direct, app)


def _grammars(language: Language, home: Home, app: Any) -> tuple[Any, Any]:
    """voiced's hassil stage for ``language`` on ``home`` (made the app's), and the peer's
    raw home-assistant-intents grammar with the same home's lists."""
    import home_assistant_intents
    from hassil import Intents
    from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

    stage = HassilIntent(HassilOptions(home=str(home.path), sentences=[], language=language.tag))
    stage.load()
    app.grammar = stage
    raw = Intents.from_dict(home_assistant_intents.get_intents(stage.language))
    raw.slot_lists.update(stage.home.slot_lists())
    return stage, raw


def _one(sides: Sides, stage: Any, raw: Any, language: Language, pcm: bytes) -> dict[str, Any]:
    """Both sides on one utterance: text, intent (name, slots) and milliseconds each."""
    from hassil import recognize_best

    from voiced.languages import whisper_language

    started = time.perf_counter()
    transcript = sides.engine.transcribe(pcm, language.tag)
    intent = stage.recognize(transcript.text)
    ours_ms = (time.perf_counter() - started) * 1000
    samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
    started = time.perf_counter()
    segments, _ = sides.direct.transcribe(samples, language=whisper_language(language.tag))
    text = "".join(s.text for s in segments).strip()
    result = recognize_best(text, raw, language=stage.language) if text else None
    peer_ms = (time.perf_counter() - started) * 1000
    peer = result and (result.intent.name, {e.name: e.value for e in result.entities_list})
    return {
        "voiced": transcript.text,
        "voiced_intent": intent and (intent.name, intent.slots),
        "voiced_step": (transcript.data.get("decision") or {}).get("step"),
        "voiced_rescored": (transcript.data.get("rescored") or {}).get("why"),
        "voiced_ms": round(ours_ms, 1),
        "peer": text,
        "peer_intent": peer,
        "peer_ms": round(peer_ms, 1),
    }


def _sentences(home: Home, quick: bool, half: str = "both") -> list[tuple[str, Command]]:
    """(half, sentence) of a home: commands, then chatter, alternating halves (``half``:
    that one only)."""
    commands = home.commands[:4] if quick else home.commands
    chatter = home.chatter[:2] if quick else home.chatter
    both = [(HALVES[i % 2], c) for i, c in enumerate(commands)] + [
        (HALVES[i % 2], c) for i, c in enumerate(chatter)
    ]
    return [(h, c) for h, c in both if half in ("both", h)]


def run_language(
    sides: Sides,
    language: Language,
    homes: list[str],
    conditions: list[Condition],
    quick: bool,
    half: str = "both",
) -> list[dict[str, Any]]:
    """Every sentence of ``language``'s ``homes`` in every condition, both sides."""
    rows: list[dict[str, Any]] = []
    for home in language.homes:
        if home.name not in homes:
            continue
        stage, raw = _grammars(language, home, sides.app)
        # untimed: the recognizer builds this home's token grammar on its first utterance
        sides.engine.transcribe(speak(home.commands[0].text, language), language.tag)
        for index, (part, command) in enumerate(_sentences(home, quick, half)):
            for condition in conditions:
                pcm = speak(command.text, language, condition.rate)
                if condition.noise:
                    pcm = with_noise(pcm, NOISE_SNR_DB, seed=index)
                row = _one(sides, stage, raw, language, pcm)
                row |= {
                    "home": home.name, "half": part, "said": command.text,
                    "command": command.intent is not None, "condition": condition.label,
                    "voiced_right": right(row["voiced_intent"], command),
                    "peer_right": right(row["peer_intent"], command),
                }  # fmt: skip
                rows.append(row)
                print(
                    f"[languages] {language.tag} {home.name} {condition.label} {part}: "
                    f"{command.text} -> {row['voiced']!r} ({row['voiced_right']}, "
                    f"{row['voiced_ms']:.0f} ms) | peer {row['peer']!r} ({row['peer_right']}, "
                    f"{row['peer_ms']:.0f} ms)",
                    file=sys.stderr,
                    flush=True,
                )
        stage.close()
    return rows


def summary_rows(language: Language, rows: list[dict[str, Any]]) -> list[Row]:
    """The table's rows of one language: commands right per half, false activations, commands
    taken for another action, time, error rate of the text."""
    area = f"lang {language.tag}"
    commands = [r for r in rows if r["command"]]
    chatter = [r for r in rows if not r["command"]]
    out = [row for half in (*HALVES, "all") if (row := _right_row(area, language, commands, half))]
    if chatter:
        ours = sum(not r["voiced_right"] for r in chatter)
        theirs = sum(not r["peer_right"] for r in chatter)
        out.append(Row(
            area, f"{language.name} false activations (chatter), voiced", "runs", ours,
            runs=len(chatter), peer=f"faster-whisper + hassil {theirs}",
        ))  # fmt: skip
    if commands:
        out += [_wrong_row(area, language, commands), *_command_rows(area, language, commands)]
    return out


def _wrong_row(area: str, language: Language, commands: list[dict[str, Any]]) -> Row:
    """Commands answered with another action (another intent, name or number): worse than
    none."""
    ours = sum(not r["voiced_right"] and bool(r["voiced_intent"]) for r in commands)
    theirs = sum(not r["peer_right"] and bool(r["peer_intent"]) for r in commands)
    return Row(
        area, f"{language.name} commands taken for another action, voiced", "runs", ours,
        runs=len(commands), peer=f"faster-whisper + hassil {theirs}",
    )  # fmt: skip


def _right_row(
    area: str, language: Language, commands: list[dict[str, Any]], half: str
) -> Row | None:
    picked = [r for r in commands if half in ("all", r["half"])]
    if not picked:
        return None
    ours = sum(r["voiced_right"] for r in picked)
    theirs = sum(r["peer_right"] for r in picked)
    n = len(picked)
    return Row(
        area, f"{language.name} commands right ({half} half), voiced", "%", ours / n * 100,
        runs=n, peer=f"faster-whisper + hassil {theirs / n * 100:.0f}%",
        note=f"{ours}/{n} vs {theirs}/{n}",
    )  # fmt: skip


def _command_rows(area: str, language: Language, commands: list[dict[str, Any]]) -> list[Row]:
    """Median time a command and the text's error rate, both sides."""
    ours_ms = [r["voiced_ms"] for r in commands]
    peer_ms = [r["peer_ms"] for r in commands]
    ratio = statistics.median(ours_ms) / statistics.median(peer_ms)
    said = [r["said"] for r in commands]
    mine = error_rate(said, [r["voiced"] for r in commands], language.tag)
    theirs = error_rate(said, [r["peer"] for r in commands], language.tag)
    return [
        Row(area, f"{language.name} utterance -> intent (commands), voiced", "ms",
            statistics.median(ours_ms), min(ours_ms), max(ours_ms), len(ours_ms),
            peer=f"{ratio:.2f}x faster-whisper + hassil ({statistics.median(peer_ms):.0f} ms)"),
        Row(area, f"{language.name} {mine.name} (commands), voiced", "%", mine.rate * 100,
            runs=len(commands), peer=f"faster-whisper {theirs.rate * 100:.1f}%",
            note=f"{mine.errors}/{mine.units} {mine.unit}s"),
    ]  # fmt: skip


def by_condition(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Commands right and false activations per condition and home, both sides."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        key = f"{row['home']} {row['condition']}"
        cell = out.setdefault(key, {"commands": 0, "voiced": 0, "peer": 0, "chatter": 0,
                                    "voiced_false": 0, "peer_false": 0})  # fmt: skip
        if row["command"]:
            cell["commands"] += 1
            cell["voiced"] += row["voiced_right"]
            cell["peer"] += row["peer_right"]
        else:
            cell["chatter"] += 1
            cell["voiced_false"] += not row["voiced_right"]
            cell["peer_false"] += not row["peer_right"]
    return out


def run(args: argparse.Namespace) -> Section:
    ensure_importable()
    wanted = [lang for lang in LANGUAGES if lang.tag in args.languages.split(",")]
    homes = args.homes.split(",")
    section = Section("languages")
    sides = _load(wanted)
    results: dict[str, Any] = {}
    for language in wanted:
        rates = language.rates[: 1 if args.quick else args.rates]
        if args.rate_index is not None:
            rates = language.rates[args.rate_index : args.rate_index + 1]
        noise = [False] if args.quick or args.no_noise else [False, True]
        conditions = [Condition(rate, n) for rate in rates for n in noise]
        rows = run_language(sides, language, homes, conditions, args.quick, args.half)
        section.rows += summary_rows(language, rows)
        results[language.tag] = {"rows": rows, "by_condition": by_condition(rows)}
    section.results = {"machine": machine(), "languages": results}
    section.notes.append(
        f"speech: espeak-ng (de: de at {GERMAN.rates} wpm, gap 3; zh-CN: cmn-latn-pinyin at "
        f"{MANDARIN.rates} wpm), clean and with white noise at {NOISE_SNR_DB:.0f} dB SNR; "
        "model: bundled:base int8, 2 threads, both sides; homes: tests/homes/haus_de.yaml, "
        "jia_zh.yaml (2 floors), multilingual.yaml; halves: even positions tuning, odd report"
    )
    sides.engine.close()
    return section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 commands + 2 chatter a home")
    parser.add_argument("--languages", default="de,zh-CN", help="comma-separated tags")
    parser.add_argument("--homes", default="floors,small", help="floors, small or both")
    parser.add_argument("--rates", type=int, choices=(1, 2), default=2, help="speaking rates")
    parser.add_argument(
        "--rate-index", type=int, choices=(0, 1), default=None, help="that one rate only"
    )
    parser.add_argument("--no-noise", action="store_true", help="clean speech only")
    parser.add_argument("--half", choices=("tuning", "report", "both"), default="both")
    parser.add_argument("--json", type=Path, default=None, help="write results to this file")
    args = parser.parse_args(argv)
    run(args).report(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
