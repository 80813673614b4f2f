"""Stopping mid-request: every open run gets its ``run-end`` before the daemon says
``shutdown``, so the retained state on the broker is ``idle`` after ``offline``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

import pytest
from pipeline_helpers import EventRecorder, overrides
from wyoming.audio import AudioChunk
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.tts import SynthesizeStart

from voiced.daemon import prepare
from voiced.pipeline import Pipeline

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


async def test_a_request_open_at_stop_ends_and_the_retained_state_is_idle(mosquitto, mqtt_recorder):
    recorder = EventRecorder()
    settings, host = prepare(
        REPO / "tests" / "empty.toml",
        overrides(
            site_id="kitchen",
            pipeline={"source": [], "service": ["wyoming", "mqtt"]},
            stages={
                "service": {
                    "wyoming": {"uri": "tcp://127.0.0.1:0"},
                    "mqtt": {"url": mosquitto.url},
                }
            },
        ),
        [("recorder", recorder)],
    )
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    watcher = mqtt_recorder("voiced/#")
    client = AsyncTcpClient(*pipeline.stage("service", "wyoming").address)
    try:
        await client.connect()
        await client.write_event(SynthesizeStart().event())  # a run is open: speaking
        for _ in range(200):
            if recorder.of("run-start"):
                break
            await asyncio.sleep(0.05)
        site = recorder.of("run-start")[0].site_id
    finally:
        await pipeline.stop(grace=1.0)
        await client.disconnect()
    types = [e.type for e in recorder.events]
    assert types.index("run-end") < types.index("shutdown"), types
    assert recorder.of("run-end")[0].data["reason"] == "shutdown"
    assert recorder.of("shutdown")[0].site_id == "kitchen"
    await watcher.until(lambda ms: ms[-1][:2] == ("voiced/status", b"offline"))
    states = watcher.payloads(f"voiced/{site}/state")
    assert states and states[-1] == b"idle", states


async def test_a_satellite_streaming_through_the_stop_makes_no_new_site(caplog):
    settings, host = prepare(
        REPO / "tests" / "empty.toml",
        overrides(
            pipeline={"source": [], "service": ["wyoming"]},
            stages={"service": {"wyoming": {"uri": "tcp://127.0.0.1:0", "wake": []}}},
        ),
        [],
    )
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    client = AsyncTcpClient(*pipeline.stage("service", "wyoming").address)
    await client.connect()
    await client.write_event(Event("run-satellite", {"name": "porch"}))
    chunk = AudioChunk(16000, 2, 1, b"\0" * 2048).event()

    async def stream() -> None:  # a satellite never stops sending its microphone
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                await client.write_event(chunk)
                await asyncio.sleep(0)

    streaming = asyncio.create_task(stream())
    try:
        for _ in range(200):
            if "porch" in pipeline.sites:
                break
            await asyncio.sleep(0.05)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="voiced_plugins.wyoming_server"):
            await pipeline.stop(grace=1.0)
    finally:
        streaming.cancel()
        await asyncio.gather(streaming, return_exceptions=True)
        with contextlib.suppress(ConnectionError, OSError):  # the server closed it first
            await client.disconnect()
    connected = [r.getMessage() for r in caplog.records if "satellite connected" in r.getMessage()]
    assert not connected, connected  # the stop ended porch's site; nothing may start another
