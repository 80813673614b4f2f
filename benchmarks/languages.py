"""Languages: Mandarin CER, German WER and intent accuracy, voiced beside its peer.

    python -m benchmarks.languages [--quick] [--json FILE]

Each language has ~10 commands on a small home named in it (tests/homes/multilingual.yaml),
spoken by espeak-ng at one fixed voice/speed/word gap per language (no per-sentence tuning).
Both sides run Whisper base (``bundled:base``, CTranslate2 int8, 2 threads):

- voiced: the ``whisper-ctranslate2`` stage pinned to the language, with the hassil stage of
  that language choosing among its N-best and checking it (``is_command``), then that
  stage's ``recognize`` (Chinese in either script, the grammar's skip words);
- the peer: faster-whisper's own ``transcribe`` (beam 5, its defaults) told the language,
  and raw ``hassil.recognize_best`` on home-assistant-intents' sentences of the language
  with the same home's lists; and the same faster-whisper left to detect the language.

An intent counts as right when its name and its area/name slots are the expected ones.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from benchmarks.common import ROOT, Row, Section, ensure_importable, machine
from benchmarks.language_error import error_rate

HOME = ROOT / "tests" / "homes" / "multilingual.yaml"
THREADS = 2


@dataclass(frozen=True)
class Command:
    text: str
    intent: str
    slots: dict[str, str]


@dataclass(frozen=True)
class Language:
    tag: str
    name: str
    voice: str
    speed: int
    gap: int
    commands: tuple[Command, ...]


def _c(text: str, intent: str, **slots: str) -> Command:
    return Command(text, intent, slots)


GERMAN = Language("de", "German", "de", 145, 3, (
    _c("Schalte das Licht in der Küche ein.", "HassTurnOn", area="Küche"),
    _c("Schalte das Licht im Schlafzimmer aus.", "HassTurnOff", area="Schlafzimmer"),
    _c("Mach das Licht in der Küche aus.", "HassTurnOff", area="Küche"),
    _c("Schalte den Ventilator ein.", "HassTurnOn", name="Ventilator"),
    _c("Wie spät ist es?", "HassGetCurrentTime"),
    _c("Stelle einen Timer für fünf Minuten.", "HassStartTimer"),
    _c("Welcher Tag ist heute?", "HassGetCurrentDate"),
    _c("Mach das Licht im Schlafzimmer an.", "HassTurnOn", area="Schlafzimmer"),
    _c("Schalte den Ventilator aus.", "HassTurnOff", name="Ventilator"),
    _c("Welches Datum haben wir heute?", "HassGetCurrentDate"),
))  # fmt: skip
MANDARIN = Language("zh-CN", "Mandarin", "cmn-latn-pinyin", 130, 0, (
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
LANGUAGES = (MANDARIN, GERMAN)


def speak(text: str, language: Language) -> bytes:
    """espeak-ng -> 16 kHz PCM with 0.3 s of silence before and 0.7 s after (as VAD cuts)."""
    from voiced.audio import read_pipeline_audio

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "said.wav"
        subprocess.run(
            ["espeak-ng", "-v", language.voice, "-s", str(language.speed),
             "-g", str(language.gap), "-w", str(out), text],
            check=True, capture_output=True,
        )  # fmt: skip
        pcm = read_pipeline_audio(out)
    return b"\0\0" * 4800 + pcm + b"\0\0" * 11200


def right(found: Any, command: Command) -> bool:
    """The intent's name and its area/name slots are the expected ones."""
    if found is None or found[0] != command.intent:
        return False
    return all(str(found[1].get(k)) == v for k, v in command.slots.items())


def run(quick: bool, window: str = "fit") -> Section:
    ensure_importable()
    import home_assistant_intents
    from faster_whisper import WhisperModel
    from hassil import Intents, recognize_best
    from voiced_plugins.asr_whisper.ct2 import WhisperCt2Asr, WhisperCt2Options
    from voiced_plugins.asr_whisper.models import bundled_ct2_dir
    from voiced_plugins.intent_hassil import HassilIntent, HassilOptions

    from voiced.config import Settings
    from voiced.languages import whisper_language

    section = Section("languages")
    languages = [lang.tag for lang in LANGUAGES]
    settings = Settings(
        language=languages[0], sites={f"s{i}": {"language": t} for i, t in enumerate(languages)}
    )
    app = SimpleNamespace(settings=settings)
    hassil = HassilIntent(HassilOptions(home=str(HOME), sentences=[]), app)
    hassil.load()
    app.stage = lambda kind, name=None: hassil if kind == "intent" else None
    options = WhisperCt2Options(model="bundled:base", cpu_threads=THREADS, window=window)
    engine = WhisperCt2Asr(options, app)
    engine.load()
    direct = WhisperModel(
        str(bundled_ct2_dir("base")), device="cpu", compute_type="int8", cpu_threads=THREADS
    )
    results: dict[str, Any] = {}
    for language in LANGUAGES:
        commands = language.commands[:4] if quick else language.commands
        grammar = hassil.for_language(language.tag)
        raw = Intents.from_dict(home_assistant_intents.get_intents(grammar.language))
        raw.slot_lists.update(grammar.home.slot_lists())
        ours, peers, detected, ours_ms, peer_ms = [], [], [], [], []
        rows = []
        for command in commands:
            pcm = speak(command.text, language)
            started = time.perf_counter()
            transcript = engine.transcribe(pcm, language.tag)
            intent = grammar.recognize(transcript.text)
            ours_ms.append((time.perf_counter() - started) * 1000)
            ours.append(transcript.text)
            samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float32) / 32768
            started = time.perf_counter()
            segments, _ = direct.transcribe(samples, language=whisper_language(language.tag))
            text = "".join(s.text for s in segments).strip()
            result = recognize_best(text, raw, language=grammar.language) if text else None
            peer_ms.append((time.perf_counter() - started) * 1000)
            peers.append(text)
            _, info = direct.transcribe(samples[: 16000 * 30], beam_size=1)
            detected.append(info.language)
            rows.append({
                "said": command.text,
                "voiced": transcript.text,
                "voiced_intent": intent and [intent.name, intent.slots],
                "voiced_right": right(intent and (intent.name, intent.slots), command),
                "peer": text,
                "peer_intent": result and [result.intent.name,
                                           {e.name: e.value for e in result.entities_list}],
                "peer_right": right(result and (result.intent.name,
                                                {e.name: e.value for e in result.entities_list}),
                                    command),
                "detected": info.language,
            })  # fmt: skip
            heard = f"{transcript.text!r} ({intent and intent.name}) | peer {text!r}"
            print(f"[languages] {language.tag}: {command.text} -> {heard}", file=sys.stderr)
        said = [c.text for c in commands]
        mine, theirs = error_rate(said, ours, language.tag), error_rate(said, peers, language.tag)
        n = len(commands)
        ours_right = sum(r["voiced_right"] for r in rows)
        peer_right = sum(r["peer_right"] for r in rows)
        wanted = whisper_language(language.tag)
        area = f"lang {language.tag}"
        section.rows += [
            Row(area, f"{language.name} {mine.name}, voiced (pinned, N-best by the grammar)",
                "%", mine.rate * 100, runs=n,
                peer=f"direct faster-whisper {theirs.rate * 100:.1f}%",
                note=f"{mine.errors}/{mine.units} {mine.unit}s"),
            Row(area, f"{language.name} intents right, voiced", "%", ours_right / n * 100,
                runs=n, peer=f"direct faster-whisper + hassil {peer_right / n * 100:.0f}%",
                note=f"{ours_right}/{n} vs {peer_right}/{n}"),
            Row(area, f"{language.name} utterance -> intent, voiced", "ms",
                statistics.median(ours_ms), min(ours_ms), max(ours_ms), n,
                peer=f"{statistics.median(ours_ms) / statistics.median(peer_ms):.2f}x direct "
                     f"({statistics.median(peer_ms):.0f} ms)"),
            Row(area, f"{language.name} heard as {wanted} when left to detect", "%",
                sum(d == wanted for d in detected) / n * 100, runs=n,
                note="why voiced pins the language: " + ", ".join(sorted(set(detected)))),
        ]  # fmt: skip
        results[language.tag] = {"rows": rows, "voiced": mine.__dict__, "peer": theirs.__dict__}
    section.results = {"machine": machine(), "languages": results}
    section.notes.append(
        "speech: espeak-ng, one voice/speed/gap per language (de: de 145 wpm gap 3; zh-CN: "
        "cmn-latn-pinyin 130 wpm); model: bundled:base int8, 2 threads; home: "
        "tests/homes/multilingual.yaml"
    )
    engine.close()
    hassil.close()
    return section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 commands per language")
    parser.add_argument("--window", choices=("fit", "full"), default="fit", help="voiced's")
    parser.add_argument("--json", type=Path, default=None, help="write results to this file")
    args = parser.parse_args(argv)
    run(args.quick, args.window).report(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
