"""Home Assistant voice-satellite latency: a voiced site as an ESPHome device, beside a Wyoming
satellite, against a real Home Assistant core (tests/ha_fixtures.py: HA_VERSION, on 127.0.0.1).

- announce: ``assist_satellite.announce`` called (REST) -> the announcement starts playing at
  voiced's site (its ``run-start`` reason ``announce``: the sink gets its first audio then);
  a new text each time, so Home Assistant synthesizes it (voiced's Wyoming TTS) every time.
- turn: end of speech -> Home Assistant's intent result (``intent-end`` in its pipeline debug
  record), Home Assistant running the pipeline (voiced's Wyoming STT, conversation agent and
  TTS behind it): through the ESPHome device (voiced's wake word, the site's microphone
  streamed to Home Assistant) and through a Wyoming satellite (this script, a real Wyoming
  server Home Assistant connects to, streaming the same audio at the pace of speech after
  ``run-pipeline``). The same command is spoken both ways, alternating.

Home Assistant's Wyoming satellite plays announcements through ffmpeg, which this machine does
not have: no Wyoming row for announce. Times are wall clock on one machine; run it on a quiet
one and read them with the load average printed below the table.

    python -m benchmarks.esphome [--runs 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, Row, format_table, machine, stats, write_json

sys.path.insert(0, str(ROOT / "tests"))

COMMAND = "What time is it?"
ANNOUNCEMENT = "Dinner is ready in {} minutes."  # a new text each time: no TTS cache hit
CHUNK = 1024  # samples per Wyoming audio chunk


class WyomingSatellite:
    """A Wyoming satellite server Home Assistant connects to: it answers describe and pings,
    and on ``turn()`` runs Home Assistant's pipeline on the given speech."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.connected = threading.Event()
        self.port = 0
        self.writer: Any = None
        ready = threading.Event()
        threading.Thread(target=self._serve, args=(ready,), daemon=True).start()
        ready.wait(10)

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._client, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        ready.set()
        self.loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from wyoming.event import async_read_event, async_write_event
        from wyoming.info import Attribution, Describe, Info, Satellite
        from wyoming.ping import Ping, Pong
        from wyoming.satellite import RunSatellite

        attribution = Attribution(name="voiced benchmark", url="")
        info = Info(
            satellite=Satellite(
                name="bench",
                attribution=attribution,
                installed=True,
                description="benchmark satellite",
                version="1",
            )
        )
        while (event := await async_read_event(reader)) is not None:
            if Describe.is_type(event.type):
                await async_write_event(info.event(), writer)
            elif Ping.is_type(event.type):
                await async_write_event(Pong(text=Ping.from_event(event).text).event(), writer)
            elif RunSatellite.is_type(event.type):
                self.writer = writer
                self.connected.set()

    def turn(self, pcm: bytes, tail: bytes) -> float:
        """Run the pipeline on ``pcm`` then ``tail`` (silence); the wall time its last speech
        sample was sent."""
        return asyncio.run_coroutine_threadsafe(self._turn(pcm, tail), self.loop).result(60)

    async def _turn(self, pcm: bytes, tail: bytes) -> float:
        from wyoming.audio import AudioChunk, AudioStart, AudioStop
        from wyoming.event import async_write_event
        from wyoming.pipeline import PipelineStage, RunPipeline

        writer = self.writer
        run = RunPipeline(start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS)
        await async_write_event(run.event(), writer)
        await async_write_event(AudioStart(16000, 2, 1).event(), writer)
        started, sent, ended = time.monotonic(), 0.0, 0.0
        for audio in (pcm, tail):
            for i in range(0, len(audio), CHUNK * 2):
                piece = audio[i : i + CHUNK * 2]
                await async_write_event(AudioChunk(16000, 2, 1, piece).event(), writer)
                sent += len(piece) / 32000
                await asyncio.sleep(max(0.0, started + sent - time.monotonic()))
            ended = ended or time.time()
        await async_write_event(AudioStop().event(), writer)
        return ended


def intent_end(home: Any, before: int, timeout: float = 60.0) -> tuple[float, str]:
    """The newest pipeline run after ``before`` runs: its intent-end wall time and its text."""
    from test_esphome_real import pipeline_runs

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = pipeline_runs(home)
        if len(runs) > before:
            events = {e["type"]: e for e in runs[-1].get("events", [])}
            if "intent-end" in events:
                text = events.get("stt-end", {}).get("data", {}).get("stt_output", {})
                stamp = datetime.fromisoformat(events["intent-end"]["timestamp"])
                return stamp.timestamp(), str(text.get("text", ""))
            if "error" in events or "run-end" in events:
                raise RuntimeError(f"the run ended without an intent: {list(events)}")
        time.sleep(0.05)
    raise TimeoutError("no intent-end from Home Assistant")


def measure(runs: int, folder: Path) -> tuple[list[Row], list[str]]:
    from ha_fixtures import HomeAssistant, ha_venv
    from speech import silence, steady_piper
    from test_esphome_real import Voiced, esphome_entities, pipeline_runs, set_up

    (folder / "voiced").mkdir()
    voiced = Voiced(folder / "voiced")
    voiced.start()
    home = HomeAssistant(ha_venv(), folder / "homeassistant")
    notes: list[str] = []
    try:
        home.start()
        set_up(home, voiced)
        satellite = WyomingSatellite()
        home.config_flow("wyoming", {"host": "127.0.0.1", "port": satellite.port})
        if not satellite.connected.wait(60):
            raise RuntimeError("Home Assistant did not run the Wyoming satellite")
        entity = esphome_entities(home)["assist_satellite"]
        announce, esphome, wyoming = [], [], []
        command = steady_piper(COMMAND)
        wake = steady_piper("Hey Jarvis") + silence(0.8)
        for index in range(runs + 1):  # the first of each is a warm-up
            started = time.time()
            home.post(
                "/api/services/assist_satellite/announce",
                {
                    "entity_id": entity,
                    "message": ANNOUNCEMENT.format(index + 2),
                    "preannounce": False,
                },
            )
            playing = [
                e["t"]
                for e in voiced.events("run-start")
                if e["data"]["reason"] == "announce" and e["t"] >= started
            ]
            before = len(pipeline_runs(home))
            spoken = voiced.microphone.say(wake + command)
            voiced.microphone.say(silence(2.5))
            spoken.wait(30)
            at, esphome_text = intent_end(home, before)
            time.sleep(3)  # the answer played, the site idle again
            before = len(pipeline_runs(home))
            ended = satellite.turn(command, silence(2.5))
            wyoming_at, wyoming_text = intent_end(home, before)
            time.sleep(1)
            if index == 0:
                notes.append(f"heard: esphome {esphome_text!r}, wyoming {wyoming_text!r}")
                continue
            announce.append(playing[0] - started)
            esphome.append(at - spoken.at)
            wyoming.append(wyoming_at - ended)
        rows = [
            Row.of(
                "satellite",
                "announce call -> playback at the site (esphome)",
                "ms",
                stats(announce),
            ),
            Row.of(
                "satellite",
                "end of speech -> HA intent (esphome, HA pipeline)",
                "ms",
                stats(esphome),
                peer=_ratio(esphome, wyoming),
            ),
            Row.of(
                "satellite", "end of speech -> HA intent (Wyoming satellite)", "ms", stats(wyoming)
            ),
        ]
        return rows, notes
    finally:
        home.stop()
        voiced.stop()


def _ratio(values: list[float], peer: list[float]) -> str:
    mine, theirs = stats(values).get("median"), stats(peer).get("median")
    return f"{mine / theirs:.2f}x the Wyoming satellite" if mine and theirs else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="voiced-bench-esphome-") as tmp:
        rows, notes = measure(args.runs, Path(tmp))
    print(format_table(rows))
    for note in notes:
        print(note)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.json:
        write_json(args.json, {"machine": machine(), "rows": [r.to_dict() for r in rows]})


if __name__ == "__main__":
    main()
