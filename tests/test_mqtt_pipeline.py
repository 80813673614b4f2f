"""The real daemon pipeline with the mqtt service and mqtt-actions handler on mosquitto."""

from __future__ import annotations

import json

import pytest
from pipeline_helpers import overrides, run_pipeline
from speech import silence, steady_piper

from voiced.audio import write_wav

pytestmark = pytest.mark.slow


async def test_a_spoken_command_reaches_the_broker_and_switches_the_light(
    tmp_path, mosquitto, mqtt_recorder
):
    wav = tmp_path / "command.wav"
    write_wav(wav, silence(1.0) + steady_piper("Please turn on the kitchen light.") + silence(1.2))
    recorder = mqtt_recorder("#")
    _, events = await run_pipeline(
        overrides(
            pipeline={"service": ["mqtt"], "handler": ["mqtt-actions", "builtin"]},
            stages={
                "source": {"file": {"path": str(wav)}},
                "service": {"mqtt": {"url": mosquitto.url, "site_id": "default"}},
                "handler": {
                    "mqtt-actions": {
                        "entities": [
                            {"id": "light.kitchen", "command_topic": "home/kitchen/light/set"}
                        ]
                    }
                },
            },
        )
    )
    run_id = events.runs()[0]
    intent, handled = events.of("intent"), events.of("handled")
    heard = [e.data["text"] for e in events.of("transcript")]
    assert intent and intent[0].data["name"] == "HassTurnOn", (heard, events.types())
    assert handled and handled[0].data["handler"] == "mqtt-actions", (intent, handled)
    assert await recorder.first("home/kitchen/light/set") == b"ON"
    site = events.of("run-start")[0].site_id
    for kind in ("run-start", "transcript", "intent", "handled", "tts-start", "run-end"):
        payload = json.loads(await recorder.first(f"voiced/{site}/event/{kind}"))
        assert payload["run_id"] == run_id
    handled = json.loads(await recorder.first(f"voiced/{site}/event/handled"))
    assert handled["data"]["handler"] == "mqtt-actions"
    assert "kitchen" in (await recorder.first(f"voiced/{site}/transcript")).decode().lower()
    await recorder.until(lambda ms: ms[-1][0] == "voiced/status" and ms[-1][1] == b"offline")
    assert b"online" in recorder.payloads("voiced/status")
