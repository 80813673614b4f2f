"""The wyoming service with the wyoming package's own client, against a real running daemon.

Home Assistant's requests (describe, transcribe, synthesize, detect, recognize, handle) and
satellites (rooms streaming audio and getting their answers back) on 127.0.0.1. The tests
taking ``served`` run twice: against the real daemon and against a small Assistant
(tests/wyoming_assistant.py), since the plugin reaches the daemon only through that API.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import pytest_asyncio
from mqtt_fixtures import free_port
from pipeline_helpers import EventRecorder, overrides, started_pipeline
from speech import piper, silence, steady_piper
from voiced_plugins.wyoming_server import WyomingOptions, WyomingService
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.handle import Handled
from wyoming.info import Describe, Info
from wyoming.intent import Intent, NotRecognized, Recognize
from wyoming.pipeline import PipelineStage, RunPipeline
from wyoming.server import AsyncEventHandler, AsyncTcpServer
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop
from wyoming.wake import Detect
from wyoming_assistant import ScriptedAsr, SmallAssistant

from voiced.audio import PIPELINE_FORMAT, float_to_pcm16, pcm_to_float, resample
from voiced.pipeline import Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

REPO = Path(__file__).resolve().parents[1]
WAKE = "hey_jarvis"  # scores ~1.0 on the bundled Piper voice (okay_nabu ~0.97, alexa ~1.0)
SAMPLES = 1024


PORCH = free_port()  # a wyoming-satellite server that voiced dials out to


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def daemon():
    async with started_pipeline(
        overrides(
            pipeline={
                "source": [],
                "wake": ["openwakeword"],
                "handler": ["builtin", "responses"],
                "service": ["wyoming"],
            },
            stages={
                "service": {
                    "wyoming": {
                        "uri": "tcp://127.0.0.1:0",
                        "satellites": [
                            {
                                "uri": f"tcp://127.0.0.1:{PORCH}",
                                "site_id": "porch",
                                "reconnect_seconds": 0.2,
                            }
                        ],
                    }
                },
                "wake": {"openwakeword": {"models": [WAKE]}},
                "intent": {"hassil": {"home": str(REPO / "config" / "home.yaml")}},
            },
            conversation={"follow_up": "off"},
        )
    ) as pipeline:
        yield pipeline


@pytest.fixture
def recorder(daemon) -> EventRecorder:
    daemon.recorder.events.clear()
    return daemon.recorder


def connect(daemon: Pipeline) -> AsyncTcpClient:
    host, port = daemon.stage("service", "wyoming").address
    return AsyncTcpClient(host, port)


async def send_audio(
    client: AsyncTcpClient, pcm: bytes, rate: int = 16000, channels: int = 1, pace: float = 0.0
) -> None:
    """Audio chunks as a satellite sends them; ``pace`` > 0 streams in real time (x pace)."""
    step = SAMPLES * 2 * channels
    for offset in range(0, len(pcm), step):
        piece = pcm[offset : offset + step]
        await client.write_event(AudioChunk(rate, 2, channels, piece).event())
        if pace:
            await asyncio.sleep(len(piece) / (2 * channels * rate) / pace)


async def read_until(client: AsyncTcpClient, *types: str, timeout: float = 60) -> list[Event]:
    """Events up to and including the first of ``types``."""
    got: list[Event] = []
    while True:
        event = await asyncio.wait_for(client.read_event(), timeout)
        assert event is not None, f"server closed the connection; got {[e.type for e in got]}"
        got.append(event)
        if event.type in types:
            return got


def stereo_48k(pcm: bytes) -> bytes:
    mono = pcm_to_float(pcm, PIPELINE_FORMAT)[:, 0]
    up = resample(mono, 16000, 48000)
    return float_to_pcm16(np.stack([up, up], axis=1))


async def eventually(check: Any, timeout: float = 30.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


# -- Home Assistant's requests ------------------------------------------------------------------


async def test_describe_offers_asr_tts_wake_intent_and_handle(daemon):
    async with connect(daemon) as client:
        await client.write_event(Describe().event())
        info = Info.from_event((await read_until(client, "info"))[-1])
    assert [m.name for m in info.asr[0].models] == ["whisper-ctranslate2"]
    assert "en" in info.asr[0].models[0].languages
    assert [v.name for v in info.tts[0].voices] == ["en_US-joe-medium"]
    assert info.tts[0].supports_synthesize_streaming
    assert [m.name for m in info.wake[0].models] == [WAKE]
    assert [m.name for m in info.intent[0].models] == ["hassil"]
    assert info.handle[0].supports_home_control


async def test_transcribe_converts_48k_stereo_at_the_edge_and_returns_the_text(daemon, recorder):
    speech = silence(0.3) + steady_piper("Please turn on the kitchen light.") + silence(0.3)
    async with connect(daemon) as client:
        await client.write_event(Transcribe(language="en").event())
        await client.write_event(AudioStart(48000, 2, 2).event())
        await send_audio(client, stereo_48k(speech), rate=48000, channels=2)
        await client.write_event(AudioStop().event())
        transcript = Transcript.from_event((await read_until(client, "transcript"))[-1])
    assert "kitchen light" in transcript.text.lower()
    event = recorder.of("transcript")[-1]
    assert event.data["text"] == transcript.text
    assert event.site_id.startswith("wyoming-127.0.0.1")


async def test_synthesize_streams_the_answer_at_the_voice_rate(daemon):
    async with connect(daemon) as client:
        await client.write_event(Synthesize(text="The kitchen light is on. Good night!").event())
        events = await read_until(client, "audio-stop")
    assert events[0].type == "audio-start"
    start = AudioStart.from_event(events[0])
    assert (start.rate, start.width, start.channels) == (22050, 2, 1)
    chunks = [AudioChunk.from_event(e) for e in events if e.type == "audio-chunk"]
    assert chunks and all(c.audio for c in chunks)
    assert sum(c.seconds for c in chunks) > 1.0


async def test_streaming_synthesis_speaks_sentences_as_the_text_arrives(daemon):
    async with connect(daemon) as client:
        await client.write_event(SynthesizeStart().event())
        for piece in ["The kitchen ", "light is on. ", "Anything ", "else?"]:
            await client.write_event(SynthesizeChunk(text=piece).event())
        # the compatibility copy a streaming client also sends must not be spoken twice
        await client.write_event(Synthesize(text="The kitchen light is on. Anything else?").event())
        await client.write_event(SynthesizeStop().event())
        events = await read_until(client, "synthesize-stopped")
    types = [e.type for e in events]
    assert types[0] == "audio-start" and types[-2:] == ["audio-stop", "synthesize-stopped"]
    assert types.count("audio-start") == 1 and types.count("audio-stop") == 1
    seconds = sum(AudioChunk.from_event(e).seconds for e in events if e.type == "audio-chunk")
    assert 1.0 < seconds < 6.0


async def test_detect_hears_the_wake_word_and_says_so(daemon, recorder):
    speech = silence(0.5) + piper("Hey Jarvis.") + silence(0.5)
    async with connect(daemon) as client:
        await client.write_event(Detect(names=[WAKE]).event())
        await client.write_event(AudioStart(16000, 2, 1).event())
        await send_audio(client, speech)
        await client.write_event(AudioStop().event())
        detection = (await read_until(client, "detection", "not-detected"))[-1]
    assert detection.type == "detection"
    assert detection.data["name"] == WAKE
    assert [e.data["name"] for e in recorder.of("wake")] == [WAKE]


async def test_detect_without_the_wake_word_answers_not_detected(daemon):
    speech = silence(0.3) + steady_piper("Please turn on the kitchen light.") + silence(0.3)
    async with connect(daemon) as client:
        await client.write_event(Detect(names=[WAKE]).event())
        await client.write_event(AudioStart(16000, 2, 1).event())
        await send_audio(client, speech)
        await client.write_event(AudioStop().event())
        answer = (await read_until(client, "detection", "not-detected"))[-1]
    assert answer.type == "not-detected"


async def test_detect_for_an_unknown_wake_word_is_an_error_naming_the_choices(daemon):
    async with connect(daemon) as client:
        await client.write_event(Detect(names=["hey_computer"]).event())
        error = (await read_until(client, "error"))[-1]
    assert "hey_computer" in error.data["text"] and WAKE in error.data["text"]


async def test_recognize_turns_text_into_a_home_assistant_intent(daemon, recorder):
    async with connect(daemon) as client:
        await client.write_event(Recognize(text="turn on the kitchen light").event())
        intent = Intent.from_event((await read_until(client, "intent", "not-recognized"))[-1])
        await client.write_event(Recognize(text="sing me a song about ducks").event())
        missed = (await read_until(client, "intent", "not-recognized"))[-1]
    assert intent.name == "HassTurnOn"
    assert {e.name: e.value for e in intent.entities}["name"] == "Kitchen Light"
    assert missed.type == "not-recognized" and NotRecognized.from_event(missed).text
    assert recorder.of("intent")[-1].data["name"] == "HassTurnOn"


async def test_a_transcript_home_assistant_executes_comes_back_as_an_intent_to_speak(
    daemon, recorder
):
    async with connect(daemon) as client:
        await client.write_event(Transcript(text="turn off the kitchen light").event())
        answer = (await read_until(client, "intent", "handled", "not-handled"))[-1]
    assert answer.type == "intent"  # nobody in voiced acts on lights here: the asker does
    intent = Intent.from_event(answer)
    assert intent.name == "HassTurnOff"
    assert {e.name: e.value for e in intent.entities}["name"] == "Kitchen Light"
    assert intent.text and "light" in intent.text.lower()  # what to say, not the command
    assert "turn off" not in intent.text.lower()


async def test_a_transcript_voiced_handles_itself_is_answered_as_handled(daemon, recorder):
    async with connect(daemon) as client:
        await client.write_event(Transcript(text="what time is it").event())
        answer = (await read_until(client, "intent", "handled", "not-handled"))[-1]
    assert answer.type == "handled"
    assert Handled.from_event(answer).text
    assert recorder.of("handled")[-1].data["handler"] == "builtin"


async def test_with_intent_offered_but_not_handle_a_transcript_comes_back_as_an_intent(daemon):
    # Home Assistant's conversation entity always sends `transcript`, also to a voiced that
    # offers it recognition only: HA executes the intent itself
    service = WyomingService(WyomingOptions(uri="tcp://127.0.0.1:0", services=["intent"]), daemon)
    service.load()
    await service.start()
    try:
        host, port = service.address
        async with AsyncTcpClient(host, port) as client:
            await client.write_event(Transcript(text="turn off the kitchen light").event())
            answer = (await read_until(client, "intent", "not-recognized", "error"))[-1]
            await client.write_event(Transcript(text="sing me a song about ducks").event())
            missed = (await read_until(client, "intent", "not-recognized", "error"))[-1]
    finally:
        await service.stop()
        service.close()
    assert answer.type == "intent"
    intent = Intent.from_event(answer)
    assert intent.name == "HassTurnOff"
    assert {e.name: e.value for e in intent.entities}["name"] == "Kitchen Light"
    assert missed.type == "not-recognized"


# -- the same tests against the real daemon and a small Assistant -------------------------------


@pytest_asyncio.fixture(params=["daemon", "small-assistant"], loop_scope="module")
async def served(request, daemon):
    """(Wyoming service, the events its app saw): the real daemon's, or one on SmallAssistant."""
    if request.param == "daemon":
        daemon.recorder.events.clear()
        yield daemon.stage("service", "wyoming"), daemon.recorder.events
        return
    app = SmallAssistant(ScriptedAsr("what time is it"))
    service = WyomingService(
        WyomingOptions(uri="tcp://127.0.0.1:0", services=["tts", "handle"]), app
    )
    service.load()
    await service.start()
    yield service, app.events
    await service.stop()
    service.close()
    app.close()


def run_of(events: list[Any], reason: str) -> list[str]:
    run_id = next(e.run_id for e in events if e.type == "run-start" and e.data["reason"] == reason)
    return [str(e.type) for e in events if e.run_id == run_id]


async def test_a_transcript_nobody_understands_is_not_handled_in_a_run_of_its_own(served):
    service, events = served
    host, port = service.address
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(Transcript(text="sing me a song about ducks").event())
        answer = (await read_until(client, "handled", "not-handled"))[-1]
    assert answer.type == "not-handled"
    assert answer.data["text"] == service.app.settings.pipeline.not_understood
    await eventually(lambda: "run-end" in run_of(events, "wyoming-transcript"))
    assert run_of(events, "wyoming-transcript") == [
        "run-start",
        "intent-not-recognized",
        "run-end",
    ]


async def test_synthesized_speech_comes_in_chunks_of_the_configured_size(served):
    service, events = served
    host, port = service.address
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(Synthesize(text="Dinner is ready. Come and eat.").event())
        got = await read_until(client, "audio-stop")
    start = AudioStart.from_event(got[0])
    assert got[0].type == "audio-start" and start.rate == service.app.voice_format().rate
    chunks = [AudioChunk.from_event(e) for e in got if e.type == "audio-chunk"]
    limit = service.options.samples_per_chunk * start.width * start.channels
    assert chunks and all(0 < len(c.audio) <= limit for c in chunks)
    await eventually(lambda: "run-end" in run_of(events, "wyoming-synthesize"))
    assert run_of(events, "wyoming-synthesize") == ["run-start", "tts-audio", "run-end"]


# -- satellites ---------------------------------------------------------------------------------


async def satellite(
    daemon: Pipeline,
    name: str,
    pcm: bytes,
    *,
    woken_locally: bool,
    pace: float = 0.0,
    delay: float = 0.0,
    answered: asyncio.Event | None = None,
) -> list[Event]:
    """A satellite: announces itself, streams its room's audio, collects what comes back
    until its answer ends (or, with ``answered``, until some satellite's answer ended)."""
    await asyncio.sleep(delay)
    answered = answered or asyncio.Event()
    async with connect(daemon) as client:
        await client.write_event(Event("run-satellite", {"name": name}))
        stage = PipelineStage.ASR if woken_locally else PipelineStage.WAKE
        await client.write_event(
            RunPipeline(start_stage=stage, end_stage=PipelineStage.TTS).event()
        )
        await send_audio(client, pcm, pace=pace)
        reading = asyncio.ensure_future(read_until(client, "audio-stop", timeout=30))
        waiting = asyncio.ensure_future(answered.wait())
        await asyncio.wait({reading, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if not reading.done():
            reading.cancel()
            return []
        answered.set()
        return reading.result()


def command(text: str) -> bytes:
    return silence(0.6) + steady_piper(text) + silence(1.2)


async def test_two_satellites_streaming_at_once_each_get_their_own_answer(daemon, recorder):
    kitchen, bedroom = await asyncio.gather(
        satellite(
            daemon,
            "kitchen",
            command("Please turn on the kitchen light."),
            woken_locally=True,
            pace=4,
        ),
        satellite(
            daemon,
            "bedroom",
            command("Please turn off the bedroom light."),
            woken_locally=True,
            pace=4,
        ),
    )
    for room, events in (("kitchen", kitchen), ("bedroom", bedroom)):
        types = [e.type for e in events]
        assert "audio-start" in types and types[-1] == "audio-stop", (room, types)
        heard = [e.data["text"] for e in events if e.type == "transcript"]
        assert len(heard) == 1 and room in heard[0].lower(), (room, heard)
        said = [e.data["text"] for e in events if e.type == "synthesize"]
        assert len(said) == 1 and "light" in said[0].lower(), (room, said)
        assert any(e.type == "transcript" and e.site_id == room for e in recorder.events)


async def test_the_same_wake_word_on_two_satellites_100_ms_apart_starts_one_run(daemon, recorder):
    """One run, at the site whose detection claimed first (test_arbiter.py: the earliest
    wins); on a busy machine the two detections, 100 ms apart in the audio, may finish in
    either order, so which site that is is not asked here."""
    if getattr(daemon, "arbiter", None) is None:  # until pipeline.py creates voiced.arbiter's
        pytest.skip("the pipeline does not consult a WakeArbiter yet (Site claim_wake wiring)")
    audio = silence(0.5) + piper("Hey Jarvis.") + silence(0.4) + command("What time is it?")
    answered = asyncio.Event()
    streams = await asyncio.gather(
        satellite(daemon, "lounge", audio, woken_locally=False, pace=1.0, answered=answered),
        satellite(
            daemon, "hallway", audio, woken_locally=False, pace=1.0, delay=0.1, answered=answered
        ),
    )
    woke = [e.site_id for e in recorder.of("run-start") if e.data.get("reason") == "wake"]
    assert len(woke) == 1 and woke[0] in ("lounge", "hallway"), woke
    winner, loser = woke[0], "hallway" if woke[0] == "lounge" else "lounge"
    ignored = recorder.of("wake-ignored")
    assert [(e.site_id, e.data["winner"]) for e in ignored] == [(loser, winner)]
    heard = dict(zip(("lounge", "hallway"), streams, strict=True))
    assert [e.type for e in heard[winner]][-1] == "audio-stop"
    assert "audio-start" not in [e.type for e in heard[loser]]


async def test_a_satellite_dropping_mid_command_leaves_the_daemon_healthy(daemon, recorder):
    speech = command("Please turn on the kitchen light.")
    host, port = daemon.stage("service", "wyoming").address
    reader, writer = await asyncio.open_connection(host, port)
    client = AsyncTcpClient(host, port)
    client._reader, client._writer = reader, writer
    await client.write_event(Event("run-satellite", {"name": "garage"}))
    await client.write_event(
        RunPipeline(start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS).event()
    )
    await send_audio(client, speech[: len(speech) // 2])
    writer.transport.abort()  # the Wi-Fi goes away mid-command

    def run_ended() -> bool:
        started = [e.run_id for e in recorder.of("run-start") if e.site_id == "garage"]
        return bool(started) and any(e.run_id == started[0] for e in recorder.of("run-end"))

    await eventually(run_ended)
    await eventually(lambda: "garage" not in daemon.sites)  # its wake and VAD are freed
    states = [e.data["state"] for e in recorder.of("state") if e.site_id == "garage"]
    assert states[-1] == "idle", states
    assert not [e for e in recorder.of("error") if "Traceback" in e.data.get("message", "")]
    # the daemon still serves: a new satellite for the same room, and a plain request
    again = await satellite(daemon, "garage", speech, woken_locally=True, pace=4)
    assert [e.type for e in again][-1] == "audio-stop"
    async with connect(daemon) as other:
        await other.write_event(Recognize(text="turn on the kitchen light").event())
        assert (await read_until(other, "intent"))[-1].data["name"] == "HassTurnOn"


class PorchSatellite(AsyncEventHandler):
    """A satellite server, as wyoming-satellite runs one: waits for run-satellite, then
    streams its microphone and plays what it is sent."""

    def __init__(self, reader, writer, audio: bytes, got: asyncio.Queue[Event]) -> None:
        super().__init__(reader, writer)
        self.audio = audio
        self.got = got

    async def handle_event(self, event: Event) -> bool:
        await self.got.put(event)
        if event.type == "run-satellite":
            await self.write_event(
                RunPipeline(start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS).event()
            )
            step = SAMPLES * 2
            for offset in range(0, len(self.audio), step):
                await self.write_event(
                    AudioChunk(16000, 2, 1, self.audio[offset : offset + step]).event()
                )
        return True


async def test_voiced_dials_out_to_a_satellite_server_and_answers_it(daemon, recorder):
    got: asyncio.Queue[Event] = asyncio.Queue()
    audio = command("What time is it?")
    server = AsyncTcpServer("127.0.0.1", PORCH)
    await server.start(lambda r, w: PorchSatellite(r, w, audio, got))
    try:
        seen: list[Event] = []
        while not seen or seen[-1].type != "audio-stop":
            seen.append(await asyncio.wait_for(got.get(), 60))
    finally:
        await server.stop()
    types = [e.type for e in seen]
    assert types[0] == "run-satellite" and "audio-start" in types
    assert [e.data["text"] for e in seen if e.type == "transcript"] == ["What time is it?"]
    assert any(e.type == "transcript" and e.site_id == "porch" for e in recorder.events)


async def test_a_busy_port_fails_start_up_naming_the_uri_and_the_key(daemon):
    host, port = daemon.stage("service", "wyoming").address
    second = WyomingService(WyomingOptions(uri=f"tcp://{host}:{port}"), daemon)
    with pytest.raises(RuntimeError, match=rf"tcp://{host}:{port}.*stages\.service\.wyoming"):
        await second.start()


async def test_options_reject_a_tcp_uri_without_a_port():
    with pytest.raises(ValueError, match="needs a host and a port"):
        WyomingOptions(uri="tcp://127.0.0.1")
