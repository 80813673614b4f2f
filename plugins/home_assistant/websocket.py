"""A small client of Home Assistant's WebSocket API: auth, commands, event subscriptions."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from typing import Any

import websockets

from .options import HomeAssistantConnection


class HomeAssistantError(Exception):
    """Home Assistant refused a request (bad token, unknown command, ...)."""


class HomeAssistantSocket:
    """One authenticated connection; ``command()`` awaits the matching result.

    Events of subscriptions are passed to their callback on the loop. The connection ends
    (``closed`` completes) when the server goes away; callers reconnect.
    """

    def __init__(self, connection: HomeAssistantConnection) -> None:
        self.connection = connection
        self.ha_version: str | None = None
        self._ws: Any = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._listeners: dict[int, Callable[[dict[str, Any]], None]] = {}
        self._reader: asyncio.Task[None] | None = None
        self.closed: asyncio.Future[None] | None = None

    async def connect(self) -> None:
        token = self.connection.access_token()
        self._ws = await asyncio.wait_for(
            websockets.connect(
                self.connection.websocket_url,
                ssl=self.connection.ssl_context(),
                max_size=64 * 1024 * 1024,  # a big home's registries come in one message
                open_timeout=self.connection.timeout,
            ),
            self.connection.timeout,
        )
        try:
            hello = json.loads(await self._ws.recv())
            if hello.get("type") != "auth_required":
                raise HomeAssistantError(f"unexpected greeting from Home Assistant: {hello}")
            await self._ws.send(json.dumps({"type": "auth", "access_token": token}))
            answer = json.loads(await asyncio.wait_for(self._ws.recv(), self.connection.timeout))
            if answer.get("type") != "auth_ok":
                raise HomeAssistantError(
                    f"Home Assistant refused the token: {answer.get('message', answer)}"
                )
            self.ha_version = answer.get("ha_version")
        except BaseException:
            await self._ws.close()
            raise
        self.closed = asyncio.get_running_loop().create_future()
        self._reader = asyncio.create_task(self._read(), name="home-assistant-ws")

    async def command(self, kind: str, **data: Any) -> Any:
        """Send ``{"type": kind, **data}``; return its ``result`` or raise HomeAssistantError."""
        if self._ws is None or self.closed is None or self.closed.done():
            raise ConnectionError("not connected to Home Assistant")
        ident = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        try:
            await self._ws.send(json.dumps({"id": ident, "type": kind, **data}))
            return await asyncio.wait_for(future, self.connection.timeout)
        finally:
            self._pending.pop(ident, None)

    async def subscribe(self, event_type: str, callback: Callable[[dict[str, Any]], None]) -> None:
        """Call ``callback(event)`` for each Home Assistant event of this type."""
        ident = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        self._listeners[ident] = callback
        await self._ws.send(
            json.dumps({"id": ident, "type": "subscribe_events", "event_type": event_type})
        )
        await asyncio.wait_for(future, self.connection.timeout)

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    async def _read(self) -> None:
        error: BaseException | None = None
        try:
            async for raw in self._ws:
                self._dispatch(json.loads(raw))
        except (websockets.ConnectionClosed, OSError) as exc:
            error = exc
        finally:
            gone = ConnectionError(f"Home Assistant closed the connection ({error or 'closed'})")
            for future in self._pending.values():
                if not future.done():
                    future.set_exception(gone)
            if self.closed is not None and not self.closed.done():
                self.closed.set_result(None)

    def _dispatch(self, message: dict[str, Any]) -> None:
        ident = message.get("id")
        if message.get("type") == "event":
            listener = self._listeners.get(ident)
            if listener is not None:
                listener(message.get("event") or {})
            return
        future = self._pending.get(ident)
        if future is None or future.done():
            return
        if message.get("success", True):
            future.set_result(message.get("result"))
        else:
            error = message.get("error") or {}
            future.set_exception(
                HomeAssistantError(f"{error.get('code', 'error')}: {error.get('message', '')}")
            )
