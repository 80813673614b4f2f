"""The esphome service against hostile clients on 127.0.0.1, with the real daemon: garbage,
a noise handshake to a plaintext device, a 1 GiB frame, an unknown message type, a message that
does not decode, a frame that never ends, an idle connection and too many connections.

Each gets a ``DisconnectRequest`` (where the protocol allows one) and is dropped within its
limits; the daemon stays up and Home Assistant's own client (aioesphomeapi) still connects.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aioesphomeapi import APIClient
from aioesphomeapi import api_pb2 as api
from loop_lag import loop_lag
from pipeline_helpers import overrides, started_pipeline
from voiced_plugins.esphome.frames import encode

from voiced.pipeline import Pipeline

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

MAX_FRAME = 4096
READ = 0.5
IDLE = 1.5
MAX_CONNECTIONS = 3
DISCONNECT = encode(api.DisconnectRequest())
KEY = base64.b64encode(bytes(range(32))).decode()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def daemon() -> AsyncIterator[Pipeline]:
    devices = [{"site_id": "default", "port": 0},
               {"site_id": "hall", "port": 0, "encryption_key": KEY}]  # fmt: skip
    options = {"devices": devices, "max_frame_bytes": MAX_FRAME, "read_seconds": READ,
               "idle_seconds": IDLE, "max_connections": MAX_CONNECTIONS}  # fmt: skip
    async with started_pipeline(
        overrides(
            pipeline={"source": [], "service": ["esphome"]},
            stages={"service": {"esphome": options}},
        )
    ) as pipeline:
        yield pipeline


@pytest.fixture
def lag():
    with loop_lag() as monitor:
        yield monitor
    monitor.check()


def address(daemon: Pipeline, site: str = "default") -> tuple[str, int]:
    service = daemon.stage("service", "esphome")
    return service.devices[site].address


async def answer_then_close(
    daemon: Pipeline, data: bytes, within: float = 5.0, site: str = "default"
) -> bytes:
    """Send ``data``; everything the device sends back until it closes the connection."""
    reader, writer = await asyncio.open_connection(*address(daemon, site))
    writer.write(data)
    await writer.drain()
    try:
        async with asyncio.timeout(within):
            return await reader.read(1 << 20)
    finally:
        writer.close()


async def still_serves(daemon: Pipeline) -> None:
    client = APIClient(*address(daemon), None)
    await client.connect(login=True)
    try:
        info = await client.device_info()
        assert info.name == "voiced-default"
    finally:
        await client.disconnect()


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", id="http"),
        pytest.param(b"\x01\x00\x00", id="noise-hello"),
        pytest.param(b"\x00\x80\x80\x80\x80\x80\x01", id="varint-over-5-bytes"),
        pytest.param(b"\x00\x05\xe7\x07hello", id="unknown-type-999"),
        pytest.param(b"\x00\x03\x01\xff\xff\xff", id="hello-that-does-not-decode"),
    ],
)
async def test_garbage_gets_a_disconnect_and_is_dropped(daemon, lag, data: bytes) -> None:
    refused = daemon.stage("service", "esphome").devices["default"].refused
    assert await answer_then_close(daemon, data) == DISCONNECT
    assert daemon.stage("service", "esphome").devices["default"].refused == refused + 1
    await still_serves(daemon)


async def test_a_huge_frame_is_refused_from_its_header(daemon, lag) -> None:
    """Only the header of a 1 GiB frame is sent: the device answers without waiting for
    (or buffering) any of its payload."""
    assert await answer_then_close(daemon, b"\x00\x80\x80\x80\x80\x04\x01") == DISCONNECT
    await still_serves(daemon)


async def test_a_frame_that_never_ends_is_dropped_after_read_seconds(daemon, lag) -> None:
    started = time.monotonic()
    assert await answer_then_close(daemon, b"\x00\x10\x01abc", within=READ + 5) == DISCONNECT
    assert time.monotonic() - started >= READ  # it was the read limit that ended it


async def test_a_silent_connection_is_closed_after_idle_seconds(daemon, lag) -> None:
    started = time.monotonic()
    assert await answer_then_close(daemon, b"", within=IDLE + 5) == b""
    assert time.monotonic() - started >= IDLE  # it was the idle limit that ended it


async def test_connections_over_the_limit_are_closed_at_once(daemon, lag) -> None:
    held = [await asyncio.open_connection(*address(daemon)) for _ in range(MAX_CONNECTIONS)]
    try:
        await asyncio.sleep(0.1)
        assert await answer_then_close(daemon, b"", within=2) == b""
    finally:
        for _, writer in held:
            writer.close()
    await asyncio.sleep(0.2)
    await still_serves(daemon)


async def test_an_encrypted_device_answers_plaintext_with_a_noise_refusal(daemon, lag) -> None:
    answer = await answer_then_close(daemon, encode(api.HelloRequest()), site="hall")
    assert answer == b"\x01\x00\x13\x01Bad indicator byte"


async def test_an_encrypted_device_drops_a_bad_handshake_and_a_huge_frame(daemon, lag) -> None:
    hello = b"\x01\x00\x00"
    answer = await answer_then_close(daemon, hello + b"\x01\x00\x05\x00junk", site="hall")
    assert answer.endswith(b"\x01Handshake MAC failure")
    assert await answer_then_close(daemon, hello + b"\x01\xff\xff", site="hall") == b""
    client = APIClient(*address(daemon, "hall"), None, noise_psk=KEY)
    await client.connect(login=True)
    await client.disconnect()
