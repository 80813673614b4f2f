"""The Wyoming plugin against a small Assistant: it goes through the app API only.

Each request is a run of the core's own ``Run`` (run-start .. run-end, with its run id on every
event), with the daemon's stage timeout; a satellite is attached as a site and detached when it
leaves. test_wyoming.py drives the same plugin against the real daemon and models.
"""

from __future__ import annotations

import asyncio
import math
import struct

import pytest
from voiced_plugins.wyoming_server import WyomingOptions, WyomingService
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.intent import Intent as WyIntent
from wyoming.pipeline import PipelineStage, RunPipeline
from wyoming.tts import Synthesize
from wyoming_assistant import VOICE, ScriptedAsr, SmallAssistant

from voiced.intents import Intent
from voiced.run import CANNOT_DO

KITCHEN_ON = Intent("HassTurnOn", {"name": "kitchen light"}, text="turn on the kitchen light")


def tone(seconds: float, rate: int, channels: int) -> bytes:
    frames = int(seconds * rate)
    samples = []
    for i in range(frames):
        value = int(8000 * math.sin(2 * math.pi * 300 * i / rate))
        samples.extend([value] * channels)
    return struct.pack(f"<{len(samples)}h", *samples)


@pytest.fixture
async def served(request):
    """(assistant, service) with the service listening on a free loopback port."""
    asr = getattr(request, "param", None) or ScriptedAsr("turn on the kitchen light")
    app = SmallAssistant(
        asr,
        intents={"turn on the kitchen light": KITCHEN_ON, "open the pod bay doors": Intent("Pod")},
        handles={"HassTurnOn": "Turned on the kitchen light."},
        stage_timeout=0.5,
    )
    services = ["asr", "tts", "intent", "handle", "satellite"]
    service = WyomingService(WyomingOptions(uri="tcp://127.0.0.1:0", services=services), app)
    service.load()
    await service.start()
    yield app, service
    asr.released.set()
    await service.stop()
    service.close()
    app.close()


def client_of(service: WyomingService) -> AsyncTcpClient:
    host, port = service.address
    return AsyncTcpClient(host, port)


async def read_until(client: AsyncTcpClient, *types: str) -> list[Event]:
    got: list[Event] = []
    while True:
        event = await asyncio.wait_for(client.read_event(), 10)
        assert event is not None, f"closed after {[e.type for e in got]}"
        got.append(event)
        if event.type in types:
            return got


async def eventually(check, timeout: float = 5.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not met in time")


async def transcribe(client: AsyncTcpClient, pcm: bytes, rate: int, channels: int) -> list[Event]:
    await client.write_event(Transcribe(language="en").event())
    await client.write_event(AudioStart(rate, 2, channels).event())
    step = 1024 * 2 * channels
    for offset in range(0, len(pcm), step):
        await client.write_event(AudioChunk(rate, 2, channels, pcm[offset : offset + step]).event())
    await client.write_event(AudioStop().event())
    return await read_until(client, "transcript", "error")


async def test_a_transcribe_request_is_one_run_with_the_audio_converted_at_the_edge(served):
    app, service = served
    async with client_of(service) as client:
        answer = await transcribe(client, tone(1.5, 48000, 2), 48000, 2)
    assert Transcript.from_event(answer[-1]).text == "turn on the kitchen light"
    [heard] = service.app.asr.loaded[0][1].heard
    assert len(heard) == pytest.approx(1.5 * 32000, abs=2 * 160)  # 16 kHz mono 16-bit
    [start] = app.of("run-start")
    assert start.run_id and start.data == {"reason": "wyoming-transcribe", "via": "wyoming"}
    assert app.run_of(start.run_id) == ["run-start", "transcript", "run-end"]
    transcript = app.of("transcript")[0]
    assert transcript.data["via"] == "wyoming" and transcript.data["audio_seconds"] == 1.5
    assert transcript.data["latency_s"] >= transcript.data["asr_seconds"]
    assert app.of("run-end")[0].data["reason"] == "done"


@pytest.mark.parametrize("served", [ScriptedAsr("never mind", hang=3.0)], indirect=True)
async def test_a_hanging_engine_times_out_with_the_daemons_stage_timeout(served):
    app, service = served
    async with client_of(service) as client:
        answer = await transcribe(client, tone(0.5, 16000, 1), 16000, 1)
    assert answer[-1].type == "error"
    assert answer[-1].data["code"] == "asr"
    assert "timed out after 0.5 s" in answer[-1].data["text"]
    [error] = app.of("error")
    assert error.data["stage"] == "asr" and error.run_id == app.of("run-start")[0].run_id
    assert app.of("run-end")[0].data["reason"] == "error"


async def test_a_transcript_is_recognized_handled_and_answered_in_one_run(served):
    app, service = served
    async with client_of(service) as client:
        await client.write_event(Transcript(text="turn on the kitchen light").event())
        handled = (await read_until(client, "handled", "not-handled"))[-1]
        await client.write_event(Transcript(text="sing about ducks").event())
        missed = (await read_until(client, "handled", "not-handled"))[-1]
        await client.write_event(Transcript(text="open the pod bay doors").event())
        left = (await read_until(client, "handled", "not-handled", "intent"))[-1]
    assert (handled.type, handled.data["text"]) == ("handled", "Turned on the kitchen light.")
    assert (missed.type, missed.data["text"]) == ("not-handled", "Sorry, I didn't understand that.")
    # recognized, but no voiced handler acts on it: the asker (Home Assistant) executes it,
    # and voiced has no words of its own to put in ``text``
    assert left.type == "intent" and left.data["name"] == "Pod"
    assert not left.data.get("text")
    first, second, third = (e.run_id for e in app.of("run-start"))
    assert app.run_of(first) == ["run-start", "intent", "handled", "run-end"]
    assert app.run_of(second) == ["run-start", "intent-not-recognized", "run-end"]
    assert app.run_of(third) == ["run-start", "intent", "handled", "run-end"]


async def test_an_intent_nobody_handles_gets_the_same_answer_as_at_the_microphone(served):
    _app, service = served
    async with client_of(service) as client:
        await client.write_event(WyIntent(name="HassVacuumStart").event())
        answer = (await read_until(client, "handled", "not-handled"))[-1]
    assert (answer.type, answer.data["text"]) == ("not-handled", CANNOT_DO)


async def test_synthesize_streams_the_voice_in_chunks_of_the_configured_size(served):
    app, service = served
    async with client_of(service) as client:
        await client.write_event(Synthesize(text="One two three. Four five.").event())
        events = await read_until(client, "audio-stop")
        await client.write_event(Synthesize(text="   ").event())
        empty = await read_until(client, "audio-stop")
    start = AudioStart.from_event(events[0])
    assert (start.rate, start.width, start.channels) == (VOICE.rate, VOICE.width, VOICE.channels)
    chunks = [AudioChunk.from_event(e) for e in events if e.type == "audio-chunk"]
    assert sum(c.seconds for c in chunks) == pytest.approx(0.5, abs=0.01)
    assert all(len(c.audio) <= 1024 * 2 for c in chunks)
    assert [e.type for e in empty] == ["audio-start", "audio-stop"]
    spoken = app.of("run-start")[0].run_id
    assert app.run_of(spoken) == ["run-start", "tts-audio", "run-end"]


async def test_a_satellite_is_attached_as_a_site_then_listened_to_and_detached(served):
    app, service = served
    async with client_of(service) as client:
        await client.write_event(Event("run-satellite", {"name": "kitchen"}))
        await client.write_event(
            RunPipeline(start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS).event()
        )
        await eventually(lambda: ("listen", "kitchen") in app.calls)
        await client.write_event(AudioChunk(48000, 2, 1, tone(0.1, 48000, 1)).event())
        await eventually(lambda: app.fed.get("kitchen"))
    await eventually(lambda: ("detach", "kitchen") in app.calls)
    assert app.calls[:2] == [("attach", "kitchen"), ("listen", "kitchen")]
    assert all(chunk.format.rate == 16000 for chunk in app.fed["kitchen"])
    assert "kitchen" not in service.satellites
