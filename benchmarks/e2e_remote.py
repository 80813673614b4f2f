"""End to end as Home Assistant sees it: a Wyoming satellite streaming at real time, and the
MQTT event times, with early commit on and off in the same run.

One daemon in-process (the default stages as in benchmarks/e2e.py, plus its ``wyoming`` and
``mqtt`` services), a private mosquitto on 127.0.0.1. Each test file is streamed by a
satellite (the ``wyoming`` package's client: ``run-satellite``, ``run-pipeline`` from ASR to
TTS as a satellite that heard its own wake word, then ``audio-chunk`` of 1024 samples, each
sent at its real time, then silence as a microphone goes on, until the answer has played)
under a name of its own, so every file gets a fresh site and VAD. With
the speech end known from the file (where its speech stops), measured on one clock:

- Wyoming: speech end -> the first ``audio-chunk`` of the answer read by the satellite;
- MQTT: speech end -> ``voiced/<site>/event/tts-start`` and ``.../tts-audio`` (the first
  audio of the answer) arriving at a subscriber on the broker, as Home Assistant gets them.

Files alternate on/off so the machine's load hits both alike.

    python -m benchmarks.e2e_remote [--limit N] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.common import Row, Section, stats

CHUNK = 1024  # samples per audio-chunk, as wyoming-satellite sends them
RATE = 16000
ANSWER_WAIT_S = 20  # seconds of silence streamed after a file, at most, for its answer


class EventTimes:
    """A subscriber on the broker: when each voiced event of each site arrived."""

    def __init__(self, port: int, prefix: str = "voiced") -> None:
        import paho.mqtt.client as paho
        from paho.mqtt.enums import CallbackAPIVersion

        self.arrived: dict[tuple[str, str], float] = {}  # (site level, event type) -> first
        self._lock = threading.Lock()
        ready = threading.Event()
        self.client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv311)
        self.client.on_connect = lambda c, *a: c.subscribe(f"{prefix}/+/event/+", qos=1)
        self.client.on_subscribe = lambda *a: ready.set()
        self.client.on_message = self._message
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        if not ready.wait(10):
            raise RuntimeError("the MQTT subscriber could not subscribe")

    def _message(self, client: Any, userdata: Any, message: Any) -> None:
        now = time.monotonic()
        parts = message.topic.split("/")
        with self._lock:
            self.arrived.setdefault((parts[-3], parts[-1]), now)

    def at(self, site: str, event_type: str) -> float | None:
        with self._lock:
            return self.arrived.get((site, event_type))

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


async def satellite(address: tuple[str, int], name: str, pcm: bytes) -> dict[str, Any]:
    """Stream ``pcm`` as satellite ``name`` at real time; when it began (monotonic), when the
    answer's first audio came back, and what else came back."""
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient
    from wyoming.event import Event
    from wyoming.pipeline import PipelineStage, RunPipeline

    got: dict[str, Any] = {"types": [], "first_audio": None}
    async with AsyncTcpClient(*address) as client:
        await client.write_event(Event("run-satellite", {"name": name}))
        await client.write_event(
            RunPipeline(start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS).event()
        )
        await client.write_event(AudioStart(RATE, 2, 1).event())

        async def read() -> None:
            while (event := await client.read_event()) is not None:
                got["types"].append(event.type)
                if event.type == "audio-chunk" and got["first_audio"] is None:
                    got["first_audio"] = time.monotonic()
                if event.type == "audio-stop":
                    return

        reader = asyncio.ensure_future(read())
        began = time.monotonic()
        step = CHUNK * 2
        # A microphone never stops: after the file, silence until the answer has played.
        quiet = bytes(step)
        offset, end = 0, len(pcm) + ANSWER_WAIT_S * 2 * RATE
        while offset < end and not reader.done():
            due = began + offset / (2 * RATE)  # each chunk at its own time: no drift
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            piece = pcm[offset : offset + step] if offset < len(pcm) else quiet
            await client.write_event(AudioChunk(RATE, 2, 1, piece).event())
            offset += step
        await client.write_event(AudioStop().event())
        try:
            await asyncio.wait_for(reader, 5)
        except TimeoutError:
            reader.cancel()
    got["began"] = began
    return got


async def run(limit: int | None = None) -> Section:
    from benchmarks import testset
    from benchmarks.e2e import intent_matches, set_early_commit, start_daemon
    from benchmarks.mqtt import start_mosquitto
    from voiced.audio import read_pipeline_audio

    folder = testset.DEFAULT_DIR
    manifest = testset.build(folder)
    items = manifest["items"][:limit] if limit else manifest["items"]
    broker_dir = Path(tempfile.mkdtemp(prefix="voiced-e2e-remote-"))
    broker, port = start_mosquitto(broker_dir)
    times = EventTimes(port)
    pipeline, recorder, _load_s, notes = await start_daemon(
        pipeline={"service": ["wyoming", "mqtt"]},
        stages={
            "intent": {"hassil": {"home": str(Path("config/home.yaml").resolve())}},
            "service": {
                "wyoming": {"uri": "tcp://127.0.0.1:0", "services": ["satellite"]},
                "mqtt": {"host": "127.0.0.1", "port": port, "embedded": "off"},
            },
        },
    )
    address = pipeline.stage("service", "wyoming").address
    results: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    try:
        for index, item in enumerate(items):
            pcm = read_pipeline_audio(folder / item["file"])
            for on in (True, False):
                set_early_commit(pipeline, on)
                pipeline.speech_cache.forget_recent()
                name = f"sat{index}{'on' if on else 'off'}"
                first = len(recorder.events)
                got = await satellite(address, name, pcm)
                await pipeline.drain()
                await asyncio.sleep(0.2)  # the last MQTT messages on their way
                speech_end = got["began"] + item.get("lead_s", 0.0) + item.get("speech_s", 0.0)
                events = [e for e in recorder.events[first:] if e.site_id == name]
                intent = next((e for e in events if e.type == "intent"), None)
                vad_end = next((e for e in events if e.type == "vad-end"), None)
                got_intent = intent and {"name": intent.data["name"], "slots": intent.data["slots"]}

                def since(moment: float | None, end: float = speech_end) -> float | None:
                    return None if moment is None else moment - end

                result = {
                    "file": item["file"],
                    "reason": vad_end.data.get("reason") if vad_end else None,
                    "intent_ok": intent_matches(item.get("intent"), got_intent),
                    "wyoming_first_audio": since(got["first_audio"]),
                    "mqtt_tts_start": since(times.at(name, "tts-start")),
                    "mqtt_tts_audio": since(times.at(name, "tts-audio")),
                    "mqtt_vad_end": since(times.at(name, "vad-end")),
                }
                results[on].append(result)
                print(
                    f"  remote early={'on ' if on else 'off'} {json.dumps(result)}", file=sys.stderr
                )
    finally:
        await pipeline.stop()
        times.close()
        broker.terminate()
        broker.wait(10)
    section = Section("e2e over Wyoming and MQTT", notes=notes)
    section.rows = rows(results)
    section.results = {"early_commit_on": results[True], "early_commit_off": results[False]}
    return section


def rows(results: dict[bool, list[dict[str, Any]]]) -> list[Row]:
    """Each measure's latency rows for early commit on and off, and their ratios."""
    out: list[Row] = []
    measures = [
        ("wyoming_first_audio", "Wyoming satellite: speech end -> first answer audio-chunk"),
        ("mqtt_tts_start", "MQTT: speech end -> tts-start event at a subscriber"),
        ("mqtt_tts_audio", "MQTT: speech end -> tts-audio (first answer audio) event"),
    ]
    for key, what in measures:
        medians = {}
        for on in (True, False):
            values = [r[key] for r in results[on] if r.get(key) is not None]
            if not values:
                continue
            medians[on] = statistics.median(values)
            label = f"remote early commit {'on' if on else 'off'}"
            missing = len(results[on]) - len(values)
            note = f"{missing} of {len(results[on])} files never got there" if missing else ""
            out.append(Row.of(label, what, "ms", stats(values), note=note))
        if len(medians) == 2:
            out += _ratio_rows(results, key, what, medians)
    return out


def _ratio_rows(
    results: dict[bool, list[dict[str, Any]]], key: str, what: str, medians: dict[bool, float]
) -> list[Row]:
    """Early commit on / off for one measure: over the files it committed early, and over
    all files (medians)."""
    out: list[Row] = []
    pairs = [
        (a[key], b[key])
        for a, b in zip(results[True], results[False], strict=True)
        if a["reason"] == "early-commit" and a.get(key) and b.get(key)
    ]
    if pairs:
        on = statistics.median(a for a, _ in pairs)
        off = statistics.median(b for _, b in pairs)
        out.append(
            Row(
                "remote",
                f"early commit on / off, the files it committed early: {what}",
                "x",
                round(on / off, 3),
                runs=len(pairs),
                peer=f"on {on * 1000:.0f} ms, off {off * 1000:.0f} ms",
            )
        )
    early = sum(r["reason"] == "early-commit" for r in results[True])
    out.append(
        Row(
            "remote",
            f"early commit on / off: {what} (medians, same run)",
            "x",
            round(medians[True] / medians[False], 3),
            runs=len(results[True]),
            peer=f"on {medians[True] * 1000:.0f} ms, off {medians[False] * 1000:.0f} ms",
            note=f"committed early {early}/{len(results[True])}; intents right on "
            f"{sum(r['intent_ok'] for r in results[True])}, off "
            f"{sum(r['intent_ok'] for r in results[False])}",
        )
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None, help="write results to this file")
    parser.add_argument(
        "--table-from", type=Path, default=None, help="only print the table of a --json file"
    )
    args = parser.parse_args(argv)
    if args.table_from is not None:
        saved = json.loads(args.table_from.read_text())["results"]
        section = Section("e2e over Wyoming and MQTT", notes=saved.get("notes", []))
        section.rows = rows({True: saved["early_commit_on"], False: saved["early_commit_off"]})
        section.report(None)
        return 0
    section = asyncio.run(run(args.limit))
    section.report(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
