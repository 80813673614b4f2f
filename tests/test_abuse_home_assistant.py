"""The Home Assistant client against a hostile Home Assistant: a real WebSocket server on
127.0.0.1 that authenticates, then misbehaves (a malformed frame, a silence after the
handshake, a registry-event flood, a change made while the client reads the registries), and
the secret it is given.

The client must survive each: log what was wrong, reconnect with backoff, coalesce bursts,
keep the token out of every log record, and stop within seconds.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import websockets
from home_stages import home_hassil
from loop_lag import loop_lag
from voiced_plugins.home_assistant.handler import HandlerOptions, HomeAssistantHandler
from voiced_plugins.home_assistant.home_source import HomeAssistantHome, HomeSourceOptions

from voiced.api.app import RunContext
from voiced.api.intents import Intent

TOKEN = "hostile-test-token-0123456789abcdef"
EMPTY_LISTS = {
    "config/floor_registry/list",
    "config/area_registry/list",
    "config/device_registry/list",
    "config/entity_registry/list",
    "get_states",
    "config/entity_registry/get_entries",
}


class App:
    """What the home source needs of the daemon: the real hassil stage, a site, events."""

    def __init__(self, hassil: Any) -> None:
        self.settings = type("Settings", (), {"site_id": "hall"})()
        self.hassil = hassil
        self.events: list[Any] = []

    def stage(self, kind: str, name: str | None = None) -> Any:
        return self.hassil if kind == "intent" else None

    def emit(self, event: Any) -> None:
        self.events.append(event)


Misbehaviour = Callable[[Any, int, dict[str, Any]], Awaitable[bool]]


class HostileHomeAssistant:
    """A WebSocket server speaking HA's auth and commands, with ``misbehave(ws, connection,
    message)`` asked first on each command (True: it answered, or will never answer)."""

    def __init__(self, misbehave: Misbehaviour) -> None:
        self.misbehave = misbehave
        self.connections = 0
        self.commands: list[str] = []
        self.server: Any = None

    async def __aenter__(self) -> HostileHomeAssistant:
        # no permessage-deflate: the server shares the test's loop, and compressing a 10 MB
        # reply (0.15-0.26 s of CPU under load) would count against the client's loop work
        self.server = await websockets.serve(self._serve, "127.0.0.1", 0, compression=None)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    @property
    def url(self) -> str:
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def _serve(self, ws: Any) -> None:
        self.connections += 1
        connection = self.connections
        await ws.send(json.dumps({"type": "auth_required", "ha_version": "2026.11.0"}))
        auth = json.loads(await ws.recv())
        if auth.get("access_token") != TOKEN:
            await ws.send(json.dumps({"type": "auth_invalid", "message": "bad token"}))
            return
        await ws.send(json.dumps({"type": "auth_ok", "ha_version": "2026.11.0"}))
        async for raw in ws:
            message = json.loads(raw)
            self.commands.append(message["type"])
            if await self.misbehave(ws, connection, message):
                continue
            await ws.send(json.dumps(answer(message)))


def answer(message: dict[str, Any]) -> dict[str, Any]:
    """HA's answer to a command: empty registries, no exposure settings, a pong."""
    kind = message["type"]
    if kind == "ping":
        return {"id": message["id"], "type": "pong"}
    result: Any = None
    if kind in EMPTY_LISTS:
        result = []
    elif "expose" in kind:
        result = {"exposed_entities": {}}
    return {"id": message["id"], "type": "result", "success": True, "result": result}


def home_source(app: App, url: str, tmp_path: Any, **options: Any) -> HomeAssistantHome:
    settings = {
        "url": url,
        "token": TOKEN,
        "cache": str(tmp_path / "home.json"),
        "timeout": 2.0,
        "reconnect_seconds": 0.2,
        "reconnect_max_seconds": 1.0,
        "refresh_delay": 0.3,
    }
    source = HomeAssistantHome(HomeSourceOptions(**(settings | options)), app)
    source.load()
    return source


async def stopped_within(source: HomeAssistantHome, seconds: float) -> float:
    loop = asyncio.get_running_loop()
    began = loop.time()
    await asyncio.wait_for(source.stop(), seconds)
    return loop.time() - began


@pytest.mark.parametrize("frame", ["this is not json {", "[1, 2, 3]"], ids=["not-json", "a-list"])
async def test_a_malformed_frame_is_logged_and_the_client_connects_again(
    frame, hassil, tmp_path, caplog
):
    async def malformed_once(ws: Any, connection: int, message: dict[str, Any]) -> bool:
        if connection == 1 and message["type"] == "config/floor_registry/list":
            await ws.send(frame)
            return True
        return False

    caplog.set_level(logging.WARNING)
    async with HostileHomeAssistant(malformed_once) as server:
        source = home_source(App(hassil), server.url, tmp_path)
        with loop_lag() as lag:
            await source.start()
            await source.wait_connected(15)
            assert server.connections >= 2
            assert await stopped_within(source, 5) < 5
        lag.check()
    malformed = [r for r in caplog.records if "malformed" in r.getMessage()]
    assert malformed, "the malformed frame is said in the log"
    assert source.home is not None and source.home["entities"] == []


async def test_a_server_that_never_answers_is_noticed_and_left(hassil, tmp_path, caplog):
    async def silent_first(ws: Any, connection: int, message: dict[str, Any]) -> bool:
        return connection == 1  # the first connection: handshake done, then nothing

    caplog.set_level(logging.WARNING)
    async with HostileHomeAssistant(silent_first) as server:
        source = home_source(App(hassil), server.url, tmp_path)
        await source.start()
        await source.wait_connected(15)  # timeout 2 s, then a second connection that answers
        assert server.connections == 2
        await stopped_within(source, 5)
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "timeout" in said


async def test_a_flood_of_registry_events_makes_few_refreshes(hassil, tmp_path):
    subscriptions: list[tuple[Any, int]] = []

    async def record_subscriptions(ws: Any, connection: int, message: dict[str, Any]) -> bool:
        if message["type"] == "subscribe_events":
            subscriptions.append((ws, message["id"]))
        return False

    async with HostileHomeAssistant(record_subscriptions) as server:
        source = home_source(App(hassil), server.url, tmp_path)
        await source.start()
        await source.wait_connected(15)
        before = source.refreshes
        ws, ident = subscriptions[0]
        event = {"id": ident, "type": "event", "event": {"event_type": "x", "data": {}}}
        with loop_lag() as lag:
            for _ in range(200):  # 200 changes in 1 s: one burst
                await ws.send(json.dumps(event))
                await asyncio.sleep(0.005)
            await asyncio.sleep(1.5)  # the burst's quiet time (0.3 s) and its refresh
        lag.check()
        assert 1 <= source.refreshes - before <= 2
        assert await stopped_within(source, 5) < 5


async def test_a_change_made_while_the_client_reads_the_registries_is_followed(hassil, tmp_path):
    porch = {"entity_id": "light.porch", "state": "off",
             "attributes": {"friendly_name": "Porch Light"}}  # fmt: skip
    subscriptions: list[tuple[Any, int]] = []
    added = False

    async def add_a_light_mid_read(ws: Any, connection: int, message: dict[str, Any]) -> bool:
        nonlocal added
        kind = message["type"]
        if kind == "subscribe_events":
            subscriptions.append((ws, message["id"]))
        elif kind == "get_states" and added:
            await ws.send(json.dumps(answer(message) | {"result": [porch]}))
            return True
        elif kind == "config/entity_registry/get_entries" and not added:
            added = True  # the light is added after the states were read: the event says so
            for subscriber, ident in subscriptions:
                event = {"event_type": "entity_registry_updated", "data": {}}
                await subscriber.send(json.dumps({"id": ident, "type": "event", "event": event}))
        return False

    async with HostileHomeAssistant(add_a_light_mid_read) as server:
        source = home_source(App(hassil), server.url, tmp_path)
        await source.start()
        await source.wait_connected(15)
        deadline = time.monotonic() + 10
        while not (source.home and source.home["entities"]) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert [e["id"] for e in source.home["entities"]] == ["light.porch"]
        assert server.connections == 1
        await stopped_within(source, 5)


async def test_the_token_is_in_no_log_record_even_at_debug(hassil, tmp_path, caplog):
    async def fine(ws: Any, connection: int, message: dict[str, Any]) -> bool:
        return False

    caplog.set_level(logging.DEBUG)
    async with HostileHomeAssistant(fine) as server:
        source = home_source(App(hassil), server.url, tmp_path)
        await source.start()
        await source.wait_connected(15)
        await stopped_within(source, 5)
    assert any("websockets" in r.name for r in caplog.records), "the library's debug lines seen"
    leaked = [r.name for r in caplog.records if TOKEN[:12] in r.getMessage() + str(r.args)]
    assert not leaked


class HostileIntentApi:
    """An HTTP server on 127.0.0.1 whose ``/api/intent/handle`` answers with ``body_of(handler)``
    (it writes the status, headers and body itself), one thread per request."""

    def __init__(self, answer: Callable[[Any], None]) -> None:
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    answer(self)
                except (BrokenPipeError, ConnectionResetError):
                    outer.dropped += 1  # the client hung up: what it should do

            def log_message(self, *args: Any) -> None:
                pass

        self.dropped = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HostileIntentApi:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


def huge_announced(request: Any) -> None:
    """500 MB announced and streamed in 1 MB pieces of JSON-ish text."""
    request.send_response(200)
    request.send_header("Content-Type", "application/json")
    request.send_header("Content-Length", str(500 * 1024 * 1024))
    request.end_headers()
    piece = b'{"speech": "' + b"x" * (1024 * 1024)
    for _ in range(500):
        request.wfile.write(piece)


def huge_unannounced(request: Any) -> None:
    """An endless body with no length: read until the connection closes."""
    request.send_response(200)
    request.send_header("Content-Type", "application/json")
    request.send_header("Connection", "close")
    request.end_headers()
    piece = b"[" * (1024 * 1024)
    for _ in range(500):
        request.wfile.write(piece)


def dripping(request: Any) -> None:
    """A valid answer, one byte every 0.2 s (each read is quick: only the whole is slow)."""
    body = json.dumps({"response_type": "action_done", "data": {"success": []}}).encode()
    request.send_response(200)
    request.send_header("Content-Length", str(len(body)))
    request.end_headers()
    for byte in body:
        request.wfile.write(bytes([byte]))
        request.wfile.flush()
        time.sleep(0.2)


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(x for x in status if x.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


@pytest.mark.parametrize(
    ("answer", "said"),
    [(huge_announced, "announces"), (huge_unannounced, "longer than"), (dripping, "took longer")],
    ids=["500-MB-announced", "endless-body", "one-byte-at-a-time"],
)
def test_an_intent_reply_is_read_within_its_size_and_time(answer, said):
    with HostileIntentApi(answer) as server:
        options = HandlerOptions(url=server.url, token=TOKEN, timeout=1.0)
        events: list[Any] = []
        app = type("App", (), {"emit": staticmethod(events.append)})()
        handler = HomeAssistantHandler(options, app)
        intent = Intent("HassTurnOn", {"name": "Kitchen Lights"}, "turn on the kitchen lights")
        before, began = rss_mb(), time.monotonic()
        response = handler.voiced_handle(intent, RunContext(site_id="hall"))
        took, grew = time.monotonic() - began, rss_mb() - before
    assert response.data["error"] == "unreachable"
    assert said in response.data["message"], response.data
    assert response.speech == options.unreachable_speech
    assert took < 5, f"{took:.1f} s"
    assert grew < 50, f"RSS grew {grew:.0f} MB"
    refused = [e for e in events if e.type == "intent-refused"]
    assert refused and refused[0].site_id == "hall"


def big_home(entities: int) -> Misbehaviour:
    """HA's registries and states of a home with ``entities`` lights in 100 areas."""
    areas = [{"area_id": f"a{i}", "name": f"Room {i}", "aliases": []} for i in range(100)]
    registry = [
        {"entity_id": f"light.l{i}", "area_id": f"a{i % 100}", "device_id": None, "name": None,
         "original_name": f"Lamp {i}", "aliases": [], "options": {}}
        for i in range(entities)
    ]  # fmt: skip
    states = [
        {"entity_id": f"light.l{i}", "state": "off", "attributes": {"friendly_name": f"Lamp {i}"}}
        for i in range(entities)
    ]
    exposed = {"exposed_entities": {f"light.l{i}": {"conversation": True} for i in range(entities)}}
    results = {"config/area_registry/list": areas, "config/entity_registry/list": registry,
               "config/entity_registry/get_entries": {e["entity_id"]: e for e in registry},
               "get_states": states}  # fmt: skip

    results["expose"] = exposed
    texts = {kind: json.dumps(result) for kind, result in results.items()}  # not on the loop

    async def answer_big(ws: Any, connection: int, message: dict[str, Any]) -> bool:
        kind = "expose" if "expose" in message["type"] else message["type"]
        if kind in texts:
            head = f'{{"id": {message["id"]}, "type": "result", "success": true, "result": '
            await ws.send(head + texts[kind] + "}")
            return True
        return False

    return answer_big


async def test_a_home_of_50000_entities_is_built_off_the_event_loop(tmp_path):
    hassil = home_hassil(repair=False)  # the client's part; the repair graph's own scaling
    async with HostileHomeAssistant(big_home(50_000)) as server:  # is the intent stage's
        source = home_source(App(hassil), server.url, tmp_path, timeout=60.0)
        # the worker thread building the home takes the GIL in turns: a callback's wall time
        # includes waiting for it, so its CPU time on the loop is the bound that tells
        with loop_lag(wall_limit=5.0) as lag:
            await source.start()
            await source.wait_connected(120)
            for _ in range(1200):  # until the home is built (seconds on a loaded machine)
                if source.home is not None and len(source.home["entities"]) == 50_000:
                    break
                await asyncio.sleep(0.1)
            assert await stopped_within(source, 5) < 5
        lag.check()
    assert len(source.home["entities"]) == 50_000
