"""A small client of Home Assistant's WebSocket API: auth, commands, event subscriptions."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Callable
from typing import Any

import websockets

from .options import HomeAssistantConnection
from .redaction import secret_logger

log = logging.getLogger(__name__)

PARSE_IN_THREAD_BYTES = 64 * 1024
"""Messages longer than this are parsed in a worker thread, off the event loop."""


class HomeAssistantError(Exception):
    """Home Assistant refused a request (bad token, unknown command, ...)."""


class MalformedMessage(ValueError):
    """A WebSocket message that is not a JSON object."""


def parse_message(raw: str | bytes) -> dict[str, Any]:
    """One message as a dict, or MalformedMessage saying what is wrong with it."""
    try:
        message = json.loads(raw)
    except ValueError as exc:
        raise MalformedMessage(f"not JSON ({exc}): {raw[:80]!r}") from None
    if not isinstance(message, dict):
        raise MalformedMessage(f"a JSON {type(message).__name__}, not an object: {raw[:80]!r}")
    return message


async def parse_off_loop(raw: str | bytes) -> dict[str, Any]:
    """``parse_message``; in a worker thread when the message is big (a registry)."""
    if len(raw) > PARSE_IN_THREAD_BYTES:
        return await asyncio.to_thread(parse_message, raw)
    return parse_message(raw)


class HomeAssistantSocket:
    """One authenticated connection; ``command()`` awaits the matching result.

    Events of subscriptions are passed to their callback on the loop. The connection ends
    (``closed`` completes, ``reason`` says why) when the server goes away or sends a malformed
    message; callers reconnect.
    """

    def __init__(self, connection: HomeAssistantConnection) -> None:
        self.connection = connection
        self.ha_version: str | None = None
        self.reason = "closed"
        self._ws: Any = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._listeners: dict[int, Callable[[dict[str, Any]], None]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.closed: asyncio.Future[None] | None = None

    async def connect(self) -> None:
        """Open the connection and authenticate, each step within ``timeout``."""
        options = self.connection
        token = options.access_token()
        self._ws = await asyncio.wait_for(
            websockets.connect(
                options.websocket_url,
                ssl=options.ssl_context(),
                max_size=options.max_message_bytes,
                open_timeout=options.timeout,
                ping_interval=options.ping_seconds,
                ping_timeout=options.ping_seconds,
                close_timeout=min(options.timeout, 2.0),
                logger=secret_logger("websockets.client"),
            ),
            options.timeout,
        )
        try:
            await self._authenticate(token)
        except BaseException:
            await self._close_ws()
            raise
        self.closed = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read(), name="home-assistant-ws")

    async def _authenticate(self, token: str) -> None:
        hello = await self._receive("its greeting (auth_required)")
        if hello.get("type") != "auth_required":
            raise HomeAssistantError(f"unexpected greeting from Home Assistant: {hello}")
        await self._ws.send(json.dumps({"type": "auth", "access_token": token}))
        answer = await self._receive("the answer to the token (auth_ok)")
        if answer.get("type") != "auth_ok":
            raise HomeAssistantError(
                f"Home Assistant refused the token: {answer.get('message', answer)}"
            )
        self.ha_version = answer.get("ha_version")

    async def _receive(self, what: str) -> dict[str, Any]:
        try:
            raw = await asyncio.wait_for(self._ws.recv(), self.connection.timeout)
        except TimeoutError:
            raise HomeAssistantError(
                f"Home Assistant sent no {what} in {self.connection.timeout:g} s (timeout)"
            ) from None
        return await parse_off_loop(raw)

    async def command(self, kind: str, **data: Any) -> Any:
        """Send ``{"type": kind, **data}``; return its ``result`` or raise HomeAssistantError."""
        return await self._call(next(self._ids), kind, data)

    async def subscribe(self, event_type: str, callback: Callable[[dict[str, Any]], None]) -> None:
        """Call ``callback(event)`` for each Home Assistant event of this type."""
        ident = next(self._ids)
        self._listeners[ident] = callback
        await self._call(ident, "subscribe_events", {"event_type": event_type})

    async def _call(self, ident: int, kind: str, data: dict[str, Any]) -> Any:
        if self._ws is None or self.closed is None or self.closed.done():
            raise ConnectionError("not connected to Home Assistant")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        try:
            await self._ws.send(json.dumps({"id": ident, "type": kind, **data}))
            return await asyncio.wait_for(future, self.connection.timeout)
        except TimeoutError:
            raise HomeAssistantError(
                f"Home Assistant did not answer {kind} in {self.connection.timeout:g} s (timeout)"
            ) from None
        finally:
            self._pending.pop(ident, None)

    async def close(self) -> None:
        """Close the connection and stop reading; never raises."""
        await self._close_ws()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader

    async def _close_ws(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._ws.close(), self.connection.timeout)

    async def _read(self) -> None:
        try:
            async for raw in self._ws:
                self._dispatch(await parse_off_loop(raw))
        except MalformedMessage as exc:
            self.reason = f"a malformed message from Home Assistant: {exc}"
            log.warning("home-assistant: %s; closing the connection", self.reason)
        except websockets.ConnectionClosed as exc:
            self.reason = f"closed ({exc})"
        except OSError as exc:
            self.reason = f"{type(exc).__name__}: {exc}"
        finally:
            self._end()

    def _end(self) -> None:
        gone = ConnectionError(f"Home Assistant connection ended: {self.reason}")
        for future in self._pending.values():
            if not future.done():
                future.set_exception(gone)
        if self.closed is not None and not self.closed.done():
            self.closed.set_result(None)

    def _dispatch(self, message: dict[str, Any]) -> None:
        ident = message.get("id")
        if message.get("type") == "event":
            listener = self._listeners.get(ident)  # type: ignore[arg-type]
            event = message.get("event")
            if listener is not None:
                listener(event if isinstance(event, dict) else {})
            return
        future = self._pending.get(ident)  # type: ignore[arg-type]
        if future is None or future.done():
            return
        if message.get("success", True):
            future.set_result(message.get("result"))
        else:
            error = message.get("error")
            error = error if isinstance(error, dict) else {}
            future.set_exception(
                HomeAssistantError(f"{error.get('code', 'error')}: {error.get('message', '')}")
            )
