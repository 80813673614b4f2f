"""Abuse and fault probes against the real daemon: a careless user and a hostile client on
127.0.0.1 (raw sockets, the ``wyoming`` client, a real mosquitto), each bounded in count and
time. Every probe runs under the loop-lag monitor (tests/loop_lag.py): no handler may do more
than 100 ms of work on the event loop, whatever the input.

The limits are set small here so that a few probes reach them; docs/limits.md lists them with
their defaults.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path

import paho.mqtt.client as paho
import pytest
import pytest_asyncio
from loop_lag import loop_lag
from mqtt_fixtures import Mosquitto, Recorder, make_certs
from paho.mqtt.enums import CallbackAPIVersion
from pipeline_helpers import EventRecorder, overrides, started_pipeline
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.client import AsyncTcpClient
from wyoming.event import Event
from wyoming.info import Describe
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart

from voiced.pipeline import Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

REPO = Path(__file__).resolve().parents[1]
MAX_SAY = 2000
MAX_COMMANDS = 3
MAX_CONNECTIONS = 8
MAX_SATELLITES = 3
IDLE = 1.5
READ = 0.5
MAX_EVENT = 65536
BIG = "a. " * 350_000  # ~1 MB of one-letter sentences


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("abuse-broker")
    mosquitto = Mosquitto(folder, make_certs(folder))
    mosquitto.start()
    yield mosquitto
    mosquitto.stop()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def daemon(broker):
    async with started_pipeline(
        overrides(
            pipeline={
                "source": [],
                "service": ["wyoming", "mqtt"],
                "max_say_chars": MAX_SAY,
                "max_commands_per_site": MAX_COMMANDS,
            },
            stages={
                "service": {
                    "wyoming": {
                        "uri": "tcp://127.0.0.1:0",
                        "max_connections": MAX_CONNECTIONS,
                        "max_satellites": MAX_SATELLITES,
                        "idle_seconds": IDLE,
                        "read_seconds": READ,
                        "max_event_bytes": MAX_EVENT,
                    },
                    "mqtt": {"url": broker.url},
                },
            },
        )
    ) as pipeline:
        yield pipeline


@pytest.fixture
def recorder(daemon) -> EventRecorder:
    daemon.recorder.events.clear()
    return daemon.recorder


@pytest.fixture
def lag():
    with loop_lag() as monitor:
        yield monitor
    monitor.check()


@pytest.fixture
def no_unretrieved_task_errors(caplog):
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        yield
    bad = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert not bad, bad


def address(daemon: Pipeline) -> tuple[str, int]:
    return daemon.stage("service", "wyoming").address


def connect(daemon: Pipeline) -> AsyncTcpClient:
    return AsyncTcpClient(*address(daemon))


async def next_event(client: AsyncTcpClient, timeout: float = 10.0) -> Event | None:
    return await asyncio.wait_for(client.read_event(), timeout)


async def raw(daemon: Pipeline) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(*address(daemon))


async def read_error(reader: asyncio.StreamReader, timeout: float = 5.0) -> dict:
    """The Wyoming error event a raw connection gets, then the end of the stream."""
    line = await asyncio.wait_for(reader.readline(), timeout)
    header = json.loads(line)
    assert header["type"] == "error", header
    data = json.loads(await reader.readexactly(header["data_length"]))
    assert await asyncio.wait_for(reader.read(), timeout) == b"", "connection left open"
    return data


def publish(broker: Mosquitto, messages: list[tuple[str, bytes]]) -> None:
    client = paho.Client(CallbackAPIVersion.VERSION2, protocol=paho.MQTTv311)
    client.connect("127.0.0.1", broker.port)
    client.loop_start()
    infos = [client.publish(topic, payload, qos=1) for topic, payload in messages]
    for info in infos:
        info.wait_for_publish(10)
    client.loop_stop()
    client.disconnect()


async def until(check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)
    return result


# -- big text -----------------------------------------------------------------------------------


async def test_a_say_over_the_limit_is_refused_with_an_error_event(daemon, broker, recorder, lag):
    watcher = Recorder(broker.port, ["voiced/#"])
    try:
        await asyncio.to_thread(publish, broker, [("voiced/default/command/say", BIG.encode())])
        errors = await until(lambda: recorder.of("error"))
        assert "max_say_chars" in errors[0].data["message"], errors[0].data
        assert len(errors[0].data["message"]) < 500
        await watcher.until(lambda ms: any(t == "voiced/default/event/error" for t, _, _ in ms))
        assert not recorder.of("tts-start") and not recorder.of("run-start")
        published = [len(p) for t, p, _ in watcher.messages if "/command/" not in t]
        assert max(published) < 5000, published
    finally:
        watcher.close()


async def test_a_synthesize_over_the_limit_is_an_error_and_the_connection_stays(daemon, lag):
    async with connect(daemon) as client:
        await client.write_event(Synthesize(text="a. " * 5000).event())
        error = await next_event(client)
        assert error.type == "error" and error.data["code"] == "too-long", error
        await client.write_event(Describe().event())
        assert (await next_event(client)).type == "info"


async def test_streamed_synthesis_past_the_limit_is_an_error(daemon, recorder, lag):
    async with connect(daemon) as client:
        await client.write_event(SynthesizeStart().event())
        await client.write_event(SynthesizeChunk(text="word " * (MAX_SAY // 4)).event())
        error = await next_event(client)
        assert error.type == "error" and error.data["code"] == "too-long", error
        await client.write_event(Describe().event())
        assert (await next_event(client)).type == "info"
    assert [e.data["reason"] for e in recorder.of("run-end")] == ["error"]


# -- Wyoming connections ------------------------------------------------------------------------


async def test_connections_over_the_limit_are_refused_fast_and_idle_ones_closed(daemon, lag):
    held = [await raw(daemon) for _ in range(MAX_CONNECTIONS)]
    await until(lambda: len(daemon.stage("service", "wyoming").sessions) == MAX_CONNECTIONS)
    started = time.monotonic()
    reader, writer = await raw(daemon)
    error = await read_error(reader)
    assert "max_connections" in error["text"] and time.monotonic() - started < 2
    writer.close()
    # nobody said anything: after idle_seconds every held connection is closed by the server
    for reader, writer in held:
        assert await asyncio.wait_for(reader.read(), IDLE + 5) == b""
        writer.close()
    async with connect(daemon) as client:  # and a real client is served again
        await client.write_event(Describe().event())
        assert (await next_event(client)).type == "info"


@pytest.mark.parametrize(
    "header",
    [
        b"this is not json\n",
        b"[1, 2, 3]\n",
        b'{"data": {}}\n',
        b'{"type": "describe", "data_length": "lots"}\n',
        b'{"type": "describe", "payload_length": -5}\n',
        b'{"type": "describe", "data": [1]}\n',
        b'{"type": "audio-chunk", "payload_length": 200000000}\n',
        b'{"type": "describe", "data_length": 4}\n[1]\n',
        b"\xff\xfe\n",
    ],
)
async def test_a_malformed_header_gets_an_error_event_and_a_closed_connection(
    daemon, header, lag, no_unretrieved_task_errors
):
    reader, writer = await raw(daemon)
    writer.write(header)
    await writer.drain()
    started = time.monotonic()
    error = await read_error(reader)
    assert error["code"] == "protocol" and time.monotonic() - started < 2, error
    writer.close()


async def test_a_declared_payload_that_never_comes_does_not_hold_the_connection(daemon, lag):
    reader, writer = await raw(daemon)
    writer.write(b'{"type": "audio-chunk", "data": {"rate": 16000, "width": 2, "channels": 1}')
    writer.write(b', "payload_length": 4096}\n' + b"\0" * 100)
    await writer.drain()
    error = await read_error(reader, READ + 5)
    assert "read_seconds" in error["text"], error
    writer.close()


async def test_bad_audio_formats_are_answered_in_words(daemon, lag):
    async with connect(daemon) as client:
        await client.write_event(Event("transcribe", {"language": "en"}))
        await client.write_event(AudioStart(16000, 2, 1).event())
        await client.write_event(AudioChunk(16000, 7, 1, b"\0" * 700).event())
        error = await next_event(client)
        assert error.data["code"] == "audio-format" and "1-4 byte samples" in error.data["text"]
        await client.write_event(Describe().event())
        assert (await next_event(client)).type == "info"


async def test_too_much_audio_is_refused_before_it_is_converted(daemon, lag):
    chunk = AudioChunk(48000, 4, 2, b"\0" * 60_000).event()  # 0.16 s per chunk
    async with connect(daemon) as client:
        await client.write_event(Event("transcribe", {"language": "en"}))
        await client.write_event(AudioStart(48000, 4, 2).event())
        for _ in range(385):  # 60.2 s: the last chunk is one too many
            await client.write_event(chunk)
        await client.write_event(AudioStop().event())
        events = [await next_event(client, 30)]
        assert events[0].type == "error" and events[0].data["code"] == "too-long", events


# -- satellites ---------------------------------------------------------------------------------


async def satellite(daemon: Pipeline, name: str) -> AsyncTcpClient:
    client = connect(daemon)
    await client.connect()
    await client.write_event(Event("run-satellite", {"name": name}))
    await client.write_event(AudioChunk(16000, 2, 1, b"\0" * 2048).event())
    return client


async def test_satellite_sites_are_bounded_and_freed_when_they_leave(daemon, lag):
    names = [f"room-{i}" for i in range(MAX_SATELLITES)]
    clients = [await satellite(daemon, name) for name in names]
    await until(lambda: all(n in daemon.sites for n in names))
    extra = await satellite(daemon, "one-too-many")
    error = await next_event(extra)
    assert error.type == "error" and error.data["code"] == "too-many-satellites", error
    assert "one-too-many" not in daemon.sites
    await extra.disconnect()
    for client in clients:
        await client.disconnect()
    await until(lambda: not any(n in daemon.sites for n in names))  # wake/VAD state freed
    wyoming = daemon.stage("service", "wyoming")
    assert not wyoming.satellites and not wyoming._sinks


@pytest.mark.parametrize("old_connection", ["left open", "just closed"])
async def test_a_satellite_that_connects_again_gets_its_site_back(daemon, old_connection, lag):
    wyoming = daemon.stage("service", "wyoming")
    first = await satellite(daemon, "attic")
    await until(lambda: "attic" in daemon.sites)
    if old_connection == "just closed":  # the server may not have read its end yet
        await first.disconnect()
    # else its Wi-Fi dropped: the old connection is still open when the satellite comes back
    second = await satellite(daemon, "attic")
    if old_connection == "left open":
        while (event := await next_event(first)) is not None:  # the server closes the old one
            assert event.type != "error", event
    await until(lambda: wyoming.satellites.get("attic") is not None and "attic" in daemon.sites)
    assert [name for name in wyoming.satellites if name.startswith("attic")] == ["attic"]
    assert not [site for site in daemon.sites if site.startswith("attic-")]
    await second.disconnect()
    await first.disconnect()
    await until(lambda: "attic" not in daemon.sites and not wyoming.satellites)


# -- command admission --------------------------------------------------------------------------


async def test_a_say_to_a_site_that_does_not_exist_makes_no_topics(daemon, broker, recorder, lag):
    watcher = Recorder(broker.port, ["voiced/#"])
    try:
        says = [(f"voiced/nowhere-{i}/command/say", b"hello") for i in range(20)]
        await asyncio.to_thread(publish, broker, says)
        errors = await until(lambda: len(recorder.of("error")) >= 20 and recorder.of("error"))
        assert all("no site 'nowhere-" in e.data["message"] for e in errors)
        assert {e.site_id for e in errors} == {"default"}
        await asyncio.sleep(0.5)
        topics = {t for t, _, _ in watcher.messages}
        assert not [t for t in topics if "nowhere" in t and "/command/" not in t], topics
        assert not recorder.of("run-start")
    finally:
        watcher.close()


async def test_a_flood_of_says_is_refused_past_the_queue_and_the_rest_are_spoken(
    daemon, broker, recorder, lag
):
    says = [("voiced/default/command/say", f"Number {i}.".encode()) for i in range(40)]
    await asyncio.to_thread(publish, broker, says)

    def settled() -> bool:
        done = [e for e in recorder.of("run-end") if e.data["reason"] == "done"]
        return len(done) + len(recorder.of("error")) == len(says)

    await until(settled, 120)
    errors = [e.data["message"] for e in recorder.of("error")]
    assert all("max_commands_per_site" in m for m in errors), errors[:3]
    assert len(errors) >= len(says) - 2 * MAX_COMMANDS, len(errors)  # the queue was full
    # one at a time, in order: each run starts after the one before ended
    order = [e.type for e in recorder.events if e.type in ("run-start", "run-end")]
    assert order == ["run-start", "run-end"] * (len(says) - len(errors)), order
    assert daemon._says.pending("default") == 0
