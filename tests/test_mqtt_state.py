"""MQTT's retained state topics mirror the core's ``state`` event, on the real daemon.

The daemon runs with a real-time file source (its ``default`` site), the mqtt service on a
real mosquitto, and the Wyoming server; commands arrive over MQTT and Wyoming as they would.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from mqtt_fixtures import Mosquitto, eventually
from pipeline_helpers import EventRecorder, overrides
from speech import silence, steady_piper
from wyoming.asr import Transcribe
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient

from voiced.audio import write_wav
from voiced.daemon import prepare
from voiced.pipeline import Pipeline

pytestmark = pytest.mark.slow

EMPTY = Path(__file__).parent / "empty.toml"


@contextlib.asynccontextmanager
async def daemon(tmp_path: Path, mosquitto: Mosquitto) -> AsyncIterator[Pipeline]:
    """The daemon with a default site (40 s of real-time silence), mqtt and wyoming."""
    wav = tmp_path / "room.wav"
    write_wav(wav, silence(40.0))
    recorder = EventRecorder()
    settings, host = prepare(
        EMPTY,
        overrides(
            pipeline={"service": ["mqtt", "wyoming"]},
            stages={
                "source": {"file": {"path": str(wav), "realtime": True}},
                "service": {
                    "mqtt": {"url": mosquitto.url, "discovery": False},
                    "wyoming": {"uri": "tcp://127.0.0.1:0", "services": ["asr"]},
                },
            },
        ),
        [("recorder", recorder)],
    )
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    running = asyncio.create_task(pipeline.run())
    try:
        await eventually(lambda: "default" in pipeline.sites, timeout=30)
        yield pipeline
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await pipeline.stop()


async def test_mute_is_retained_from_the_start_and_published_once_per_change(
    tmp_path, mosquitto, mqtt_recorder
):
    async with daemon(tmp_path, mosquitto):
        muted = mqtt_recorder("voiced/default/muted")
        assert await muted.first("voiced/default/muted", timeout=20) == b"OFF"  # not unknown
        command = mqtt_recorder("nothing/here")
        command.client.publish("voiced/default/command/mute", "ON", qos=1)
        await muted.until(lambda ms: ms[-1][1] == b"ON", timeout=20)
        command.client.publish("voiced/default/command/mute", "OFF", qos=1)
        await muted.until(lambda ms: ms[-1][1] == b"OFF" and len(ms) >= 3, timeout=20)
        await asyncio.sleep(1.0)  # a second copy of either change would have arrived by now
    assert muted.payloads("voiced/default/muted") == [b"OFF", b"ON", b"OFF"]


async def test_a_say_run_goes_from_idle_to_speaking_without_listening(
    tmp_path, mosquitto, mqtt_recorder
):
    async with daemon(tmp_path, mosquitto):
        states = mqtt_recorder("voiced/default/state")
        await states.first("voiced/default/state", timeout=20)
        command = mqtt_recorder("nothing/here")
        command.client.publish("voiced/default/command/say", "The oven is hot.", qos=1)
        await states.until(lambda ms: [p for _, p, _ in ms][-2:] == [b"speaking", b"idle"], 60)
    assert states.payloads("voiced/default/state") == [b"idle", b"speaking", b"idle"]


async def test_a_wyoming_request_site_ends_idle_not_thinking(tmp_path, mosquitto, mqtt_recorder):
    speech = silence(0.3) + steady_piper("What time is it?") + silence(0.3)
    async with daemon(tmp_path, mosquitto) as pipeline:
        states = mqtt_recorder("voiced/+/state")
        host, port = pipeline.stage("service", "wyoming").address
        async with AsyncTcpClient(host, port) as client:
            await client.write_event(Transcribe(language="en").event())
            await client.write_event(AudioStart(16000, 2, 1).event())
            await client.write_event(AudioChunk(16000, 2, 1, speech).event())
            await client.write_event(AudioStop().event())
            while (event := await asyncio.wait_for(client.read_event(), 60)).type != "transcript":
                assert event.type != "error", event.data
        [site] = {t.split("/")[1] for t, _, _ in states.messages if "wyoming" in t} or {None}
        assert site is not None and site.startswith("wyoming-127.0.0.1")
        topic = f"voiced/{site}/state"
        await states.until(lambda ms: [p for t, p, _ in ms if t == topic][-1:] == [b"idle"], 20)
    assert states.payloads(topic) == [b"thinking", b"idle"]
    late = mqtt_recorder(topic)
    assert await late.first(topic) == b"idle"
