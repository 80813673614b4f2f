"""Who is speaking: speaker verification and identification with the ge2e stage.

Voices: the bundled Piper voice and pitch/formant-shifted copies of it, flite's voices,
espeak-ng variants at several pitches, each at varied speaking rates. Each enrolled voice is
enrolled on 3 clean sentences (as ``voiced speakers enroll`` does) and tested on 24 other
sentences, each clean, in pink noise at 10 dB SNR, and through 8 kHz; un-enrolled voices say
the same sentences. Sentences 0-11 are the tuning split (the default threshold, and the
enrollment check's two-voices floor, are chosen there); the figures come from sentences
12-23, which nothing was tuned on.

The two-voices check of enrollment is tuned to refuse at most 1 % of the tuning split's
one-voice clips (two clean sentences of one voice, as long as an enrollment sentence); its
catch rate is on two-voice clips (a sentence each of two voices, each voice paired with the
next in name order).

Reported: equal error rate (EER) of verification trials (every test utterance against every
enrolled voice), false accepts and false rejects at the tuned threshold, identification as
the daemon does it (closest voice, or unknown below the threshold), per condition, the
two-voices check, and the time per utterance (this encoder in numpy, one BLAS thread, vs
resemblyzer's own torch encoder on the same audio where it is installed: the peer).
Targets: EER <= 5 %, < 30 ms per utterance.

    python benchmarks/speakers.py [--json out.json] [--sentences 24]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import CACHE, Row, Section, ensure_importable, machine, stats

RATE = 16000
RENDER_VERSION = 2  # part of the audio cache's key: bump when synthesis changes
SNR_DB = 10.0
CONDITIONS = ("clean", "noise", "8khz")
TUNING = range(0, 12)  # test sentences the thresholds are chosen on
EVALUATION = range(12, 24)  # test sentences the figures come from

ENROLL_SENTENCES = (
    "Turn on the lights in the kitchen and set the heating to twenty one degrees.",
    "What is the weather going to be like tomorrow morning?",
    "Remind me to call my sister when I get home this evening.",
)
TEST_SENTENCES = (
    "Turn off the bedroom light.",
    "Set a timer for ten minutes.",
    "What time is it?",
    "Lock the front door please.",
    "Play some music in the living room.",
    "Is the garage door open?",
    "Dim the lights in the hallway to thirty percent.",
    "What is the temperature outside right now?",
    "Add milk and eggs to the shopping list.",
    "Turn on the fan in the office.",
    "Cancel the pizza timer.",
    "Open the blinds in the bedroom.",
    "How long is left on the laundry timer?",
    "Unlock the front door.",
    "Set the thermostat to nineteen degrees.",
    "Turn off all the lights downstairs.",
    "What is on my calendar for tomorrow afternoon?",
    "Close the garage door.",
    "Turn the living room lamp on.",
    "Is the back door locked?",
    "Start the robot vacuum in the kitchen.",
    "What is the humidity in the bathroom?",
    "Turn off the television in the den.",
    "Good night, switch everything off.",
)
SPEEDS = (140, 165, 190)  # words per minute, varied utterance by utterance

# name -> (engine, voice, pitch or shift); pitch: espeak's 0-99; shift: resampling factor
ENROLLED = {
    "joe": ("piper", "", 1.0),
    "joe-high": ("piper", "", 1.12),
    "awb": ("flite", "awb", 1.0),
    "rms": ("flite", "rms", 1.0),
    "slt": ("flite", "slt", 1.0),
    "kal16": ("flite", "kal16", 1.0),
    "espeak-m3": ("espeak", "en-us+m3", 40),
    "espeak-f3": ("espeak", "en+f3", 60),
    "espeak-gb-low": ("espeak", "en-gb+m1", 25),
    "espeak-f5-high": ("espeak", "en-us+f5", 80),
}
UNENROLLED = {
    "joe-low": ("piper", "", 0.9),
    "slt-low": ("flite", "slt", 0.88),
    "espeak-m7": ("espeak", "en+m7", 50),
    "espeak-car-f2": ("espeak", "en-029+f2", 45),
}


def synthesize(engine: str, voice: str, tone: float, text: str, speed: int) -> np.ndarray:
    """One sentence as float32 at 16 kHz, cached under .bench/speakers."""
    raw = repr((RENDER_VERSION, engine, voice, tone, text, speed))
    key = hashlib.sha1(raw.encode()).hexdigest()[:16]
    path = CACHE / "speakers" / f"{key}.npy"
    if path.is_file():
        return np.load(path)
    from benchmarks.testset import flite

    if engine == "espeak":
        audio = _espeak_pitched(text, voice, speed, int(tone))
    else:
        audio = _piper(text, speed) if engine == "piper" else flite(text, voice, speed)
        if tone != 1.0:  # a smaller or larger vocal tract: pitch and formants move together
            audio = _resample(audio, 1 / tone)
    audio = (audio / (np.max(np.abs(audio)) or 1.0) * 0.5).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, audio)
    return audio


def _piper(text: str, speed: int) -> np.ndarray:
    """The bundled Piper voice at a speaking rate (its length scale), float32 at 16 kHz."""
    from piper import SynthesisConfig

    from benchmarks.testset import _piper_voice
    from voiced.audio import resample

    config = SynthesisConfig(length_scale=165 / speed)
    parts, rate = [], 22050
    for chunk in _piper_voice().synthesize(text, syn_config=config):
        rate = chunk.sample_rate
        parts.append(chunk.audio_float_array)
    return resample(np.concatenate(parts), rate, RATE)


def _espeak_pitched(text: str, voice: str, speed: int, pitch: int) -> np.ndarray:
    import subprocess
    import tempfile

    from voiced.audio import read_audio_file, resample, to_mono

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "s.wav"
        command = ["espeak-ng", "-v", voice, "-s", str(speed), "-p", str(pitch), "-w", str(out)]
        subprocess.run([*command, text], check=True, capture_output=True)
        data, rate = read_audio_file(out)
    return resample(to_mono(data), rate, RATE)


def _resample(audio: np.ndarray, factor: float) -> np.ndarray:
    """Stretch by ``factor`` in time (> 1 longer and lower)."""
    from voiced.audio import resample

    return resample(audio.astype(np.float32), RATE, round(RATE * factor))


def condition(audio: np.ndarray, name: str, seed: int) -> bytes:
    """clean, pink noise at SNR_DB, or band-limited through 8 kHz -> 16 kHz PCM."""
    from benchmarks.testset import pink_noise
    from voiced.audio import float_to_pcm16, resample

    pad = np.zeros(int(0.3 * RATE), np.float32)
    signal = np.concatenate([pad, audio, pad])
    if name == "noise":
        active = audio[np.abs(audio) > 0.01]
        rms = float(np.sqrt(np.mean(active**2))) if len(active) else 0.1
        signal = signal + pink_noise(len(signal), seed) * rms / 10 ** (SNR_DB / 20)
    elif name == "8khz":
        signal = resample(resample(signal, RATE, 8000), 8000, RATE)
    return float_to_pcm16(np.clip(signal, -1.0, 1.0))


def eer(genuine: np.ndarray, impostor: np.ndarray) -> tuple[float, float]:
    """(equal error rate, the threshold where false accepts and false rejects meet)."""
    candidates = np.unique(np.concatenate([genuine, impostor]))
    best = (1.0, 0.0)
    best_gap = 2.0
    for t in candidates:
        fr = float(np.mean(genuine < t))
        fa = float(np.mean(impostor >= t))
        if abs(fa - fr) < best_gap:
            best_gap, best = abs(fa - fr), ((fa + fr) / 2, float(t))
    return best


def rates(genuine: np.ndarray, impostor: np.ndarray, threshold: float) -> tuple[float, float]:
    """(false accept rate, false reject rate) at ``threshold``."""
    return float(np.mean(impostor >= threshold)), float(np.mean(genuine < threshold))


def embed_all(encoder: Any, voices: dict[str, tuple], sentences: range) -> list[dict[str, Any]]:
    """Every test utterance of every voice in every condition, with its embedding and time."""
    out = []
    for name, (engine, voice, tone) in voices.items():
        for i in sentences:
            speed = SPEEDS[i % len(SPEEDS)]
            audio = synthesize(engine, voice, tone, TEST_SENTENCES[i], speed)
            for c, cond in enumerate(CONDITIONS):
                pcm = condition(audio, cond, seed=i * 7 + c)
                started = time.perf_counter()
                vp = encoder.embed(pcm)
                seconds = time.perf_counter() - started
                out.append(
                    {"voice": name, "sentence": i, "condition": cond, "vector": vp.vector,
                     "parts": vp.parts, "s": seconds, "pcm": pcm}
                )  # fmt: skip
    return out


def scores(
    tests: list[dict[str, Any]], book: dict[str, np.ndarray], rule: Any
) -> tuple[np.ndarray, np.ndarray]:
    """Verification trials, scored as the daemon scores them (``MatchRule``): each test
    utterance claims each enrolled voice in turn -> (genuine scores, impostor scores)."""
    names = list(book)
    matrix = np.stack([book[n] for n in names])
    genuine, impostor = [], []
    for t in tests:
        row = matrix @ t["vector"]
        for k, name in enumerate(names):
            others = np.delete(row, k)
            score = rule.score(float(row[k]), float(others.max()) if len(others) else None)
            (genuine if name == t["voice"] else impostor).append(score)
    return np.array(genuine), np.array(impostor)


class PlainCosine:
    """The peer rule: the cosine similarity with the claimed voice, nothing else."""

    threshold = 0.0

    def score(self, best: float, runner_up: float | None) -> float:
        return best


def alone_scores(tests: list[dict[str, Any]], book: dict[str, np.ndarray], rule: Any):
    """Trials of one-person homes: each enrolled voice the only one in its book."""
    pairs = [scores(tests, {name: vector}, rule) for name, vector in book.items()]
    return np.concatenate([g for g, _ in pairs]), np.concatenate([i for _, i in pairs])


def tune(tests: list[dict[str, Any]], book: dict[str, np.ndarray]) -> Any:
    """The match rule's constants from the tuning split: ``stranger`` where the equal error
    rate is lowest, ``threshold`` at that equal error point, ``alone`` so that a lone voice
    is named at its own equal error point."""
    from voiced.speakers import MatchRule

    best = None
    for stranger in np.arange(0.30, 0.80, 0.05):
        rate, threshold = eer(*scores(tests, book, MatchRule(0.0, float(stranger), 0.0)))
        if best is None or rate < best[0] - 1e-9:
            best = (rate, threshold, float(stranger))
    assert best is not None
    _, threshold, stranger = best
    _, lone_threshold = eer(*alone_scores(tests, book, MatchRule(0.0, stranger, 0.0)))
    return MatchRule(round(threshold, 3), round(stranger, 2), round(lone_threshold - threshold, 3))


def identification(tests: list[dict[str, Any]], book: dict[str, np.ndarray], rule: Any):
    """The daemon's decision per utterance: correct / wrong person / unknown."""
    from voiced.speakers import VoiceBook

    voices = VoiceBook(Path("/nonexistent"), "ge2e")
    voices.voices = dict(book)
    counts = {"correct": 0, "wrong": 0, "unknown": 0, "impostor_named": 0, "impostor_unknown": 0}
    for t in tests:
        named = voices.identify(t["vector"], rule).name
        if t["voice"] in book:
            key = (
                "unknown" if named == "unknown" else ("correct" if named == t["voice"] else "wrong")
            )
        else:
            key = "impostor_unknown" if named == "unknown" else "impostor_named"
        counts[key] += 1
    return counts


def two_voice_stats(encoder: Any, tests: list[dict[str, Any]]) -> tuple[list, list]:
    """The enrollment check's statistic (``part_agreement``) on one-voice clips (two clean
    sentences of one voice: as long as an enrollment sentence) and two-voice clips (a
    sentence each of two voices)."""
    from voiced.enrollment import part_agreement

    clean = [t for t in tests if t["condition"] == "clean"]
    by_voice: dict[str, list[dict[str, Any]]] = {}
    for t in clean:
        by_voice.setdefault(t["voice"], []).append(t)
    names = sorted(by_voice)
    gap = b"\x00\x00" * int(0.3 * RATE)
    one, two = [], []
    for k, name in enumerate(names):
        items = by_voice[name]
        other = by_voice[names[(k + 1) % len(names)]]
        for a, b, c in zip(items, items[1:], other[1:], strict=False):
            one.append(part_agreement(encoder.embed(a["pcm"] + gap + b["pcm"])))
            two.append(part_agreement(encoder.embed(a["pcm"] + gap + c["pcm"])))
    return one, two


def peer_times(tests: list[dict[str, Any]], count: int) -> list[float] | None:
    """resemblyzer's own encoder (torch, its preprocessing) on the same audio, if installed."""
    try:
        import torch
        from resemblyzer import VoiceEncoder, preprocess_wav
    except ImportError:
        return None
    torch.set_num_threads(os.cpu_count() or 1)
    encoder = VoiceEncoder("cpu", verbose=False)
    times = []
    for t in tests[:count]:
        wav = np.frombuffer(t["pcm"], "<i2").astype(np.float32) / 32768.0
        started = time.perf_counter()
        encoder.embed_utterance(preprocess_wav(wav))
        times.append(time.perf_counter() - started)
    return times


def identification_rows(
    evaluate: list[dict[str, Any]], book: dict[str, np.ndarray], rule: Any
) -> list[Row]:
    """What the daemon would say per utterance: at the defaults, and with min_similarity."""
    ident = identification(evaluate, book, rule)
    enrolled_tests = sum(ident[k] for k in ("correct", "wrong", "unknown"))
    impostor_tests = ident["impostor_named"] + ident["impostor_unknown"]
    rows = [
        Row("speakers", "identified correctly (enrolled voices)", "%",
            100 * ident["correct"] / enrolled_tests, runs=enrolled_tests,
            note=f"wrong person {ident['wrong']}, unknown {ident['unknown']}"),
        Row("speakers", "un-enrolled voices named as someone", "%",
            100 * ident["impostor_named"] / impostor_tests, runs=impostor_tests),
    ]  # fmt: skip
    for minimum in (0.75, 0.8, 0.85):  # the trade-off min_similarity offers (not tuned)
        strict = identification(evaluate, book, replace(rule, minimum=minimum))
        rows.append(
            Row("speakers", f"min_similarity {minimum}: un-enrolled named", "%",
                100 * strict["impostor_named"] / impostor_tests, runs=impostor_tests,
                note=f"enrolled identified correctly {strict['correct'] / enrolled_tests:.1%}")
        )  # fmt: skip
    return rows


def run(args: argparse.Namespace) -> Section:
    ensure_importable()
    from voiced_plugins.speaker_ge2e.encoder import Ge2eEncoder, Ge2eOptions

    encoder = Ge2eEncoder(Ge2eOptions())
    encoder.load()
    book = {}
    for name, (engine, voice, tone) in ENROLLED.items():
        prints = [
            encoder.embed(condition(synthesize(engine, voice, tone, s, 165), "clean", 0))
            for s in ENROLL_SENTENCES
        ]
        mean = np.mean([p.vector for p in prints], axis=0)
        book[name] = mean / np.linalg.norm(mean)
    voices = {**ENROLLED, **UNENROLLED}
    tuning = embed_all(encoder, voices, TUNING)
    evaluate = embed_all(encoder, voices, EVALUATION)

    rule = tune(tuning, book)
    threshold = rule.threshold
    tune_eer, _ = eer(*scores(tuning, book, rule))
    genuine, impostor = scores(evaluate, book, rule)
    eval_eer, _ = eer(genuine, impostor)
    fa, fr = rates(genuine, impostor, threshold)
    ident = identification(evaluate, book, rule)
    section = Section("speakers")
    n_gen, n_imp = len(genuine), len(impostor)
    section.rows += [
        Row("speakers", "EER, evaluation split (all conditions)", "%", eval_eer * 100,
            runs=n_gen + n_imp, note=f"{n_gen} genuine, {n_imp} impostor trials; target <= 5"),
        Row("speakers", f"false accepts at threshold {threshold:.3f}", "%", fa * 100, runs=n_imp,
            note=f"threshold, stranger {rule.stranger}, alone {rule.alone}: tuning split"),
        Row("speakers", f"false rejects at threshold {threshold:.3f}", "%", fr * 100, runs=n_gen),
    ]  # fmt: skip
    for cond in CONDITIONS:
        subset = [t for t in evaluate if t["condition"] == cond]
        g, i = scores(subset, book, rule)
        cond_fa, cond_fr = rates(g, i, threshold)
        section.rows.append(
            Row("speakers", f"EER {cond}", "%", eer(g, i)[0] * 100, runs=len(g) + len(i),
                note=f"FA {cond_fa:.1%}, FR {cond_fr:.1%} at the threshold")
        )  # fmt: skip
    g, i = scores(evaluate, book, PlainCosine())
    section.rows.append(
        Row("speakers", "EER of plain cosine similarity (the peer rule)", "%", eer(g, i)[0] * 100,
            runs=len(g) + len(i))
    )  # fmt: skip
    g, i = alone_scores(evaluate, book, rule)
    lone_fa, lone_fr = rates(g, i, threshold)
    section.rows.append(
        Row("speakers", "one-person homes: EER", "%", eer(g, i)[0] * 100, runs=len(g) + len(i),
            note=f"each voice enrolled alone; FA {lone_fa:.1%}, FR {lone_fr:.1%} at the defaults")
    )  # fmt: skip
    section.rows += identification_rows(evaluate, book, rule)
    one_t, two_t = two_voice_stats(encoder, tuning)
    one_e, two_e = two_voice_stats(encoder, evaluate)
    # A person enrolling must rarely be refused: the floor refuses 1 % of the tuning split's
    # one-voice clips, and the table says how many two-voice clips it then catches.
    floor = float(np.percentile(one_t, 1))
    caught_t = float(np.mean(np.array(two_t) < floor))
    caught = float(np.mean(np.array(two_e) < floor)) if two_e else None
    false_alarm = float(np.mean(np.array(one_e) < floor)) if one_e else None
    section.rows.append(
        Row("enrollment", f"two-voice clips caught (floor {floor:.3f})", "%",
            None if caught is None else caught * 100, runs=len(two_e),
            note=f"one-voice clips refused {false_alarm:.1%} of {len(one_e)}; "
            f"tuning: {caught_t:.1%} caught")
    )  # fmt: skip
    times = [t["s"] for t in evaluate]
    seconds = [len(t["pcm"]) / 2 / RATE for t in evaluate]
    peer = peer_times(evaluate, args.peer)
    peer_note = ""
    if peer:
        peer_note = f"{np.median(times[: len(peer)]) / np.median(peer):.2f}x resemblyzer (torch)"
    section.rows.append(
        Row.of("speakers", "time per utterance (ge2e, numpy)", "ms", stats(times),
               peer=peer_note, note=f"utterances {np.median(seconds):.1f} s median; target < 30")
    )  # fmt: skip
    if peer:
        section.rows.append(
            Row.of("speakers", "time per utterance (resemblyzer)", "ms", stats(peer))
        )
    section.results = {
        "threshold": threshold,
        "stranger": rule.stranger,
        "alone": rule.alone,
        "two_voices_floor": floor,
        "tuning_eer": tune_eer,
        "evaluation_eer": eval_eer,
        "identification": ident,
        "enrolled": list(ENROLLED),
        "unenrolled": list(UNENROLLED),
        "machine": machine(),
        "loadavg": Path("/proc/loadavg").read_text().split()[:3],
    }
    section.notes.append(f"load average {' '.join(section.results['loadavg'])}")
    section.notes.append(
        f"{len(ENROLLED)} enrolled voices, {len(UNENROLLED)} un-enrolled; "
        f"{len(TEST_SENTENCES)} test sentences x {len(CONDITIONS)} conditions each"
    )
    return section


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results as JSON here")
    parser.add_argument("--peer", type=int, default=60, help="utterances timed on resemblyzer")
    args = parser.parse_args(argv)
    run(args).report(args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
