"""Service ``home-assistant``: the home (floors, areas, exposed entities) from Home Assistant.

Loads the registries over the WebSocket API, hands them to the intent recognizer
(``use_home``), follows registry changes live, and keeps the last good home in the state
directory so a start while Home Assistant is down still recognizes everything.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from pydantic import Field

from voiced.api.events import Event, error_event

from .options import HomeAssistantConnection
from .registry import home_from_registries
from .websocket import HomeAssistantSocket

log = logging.getLogger(__name__)

HOME_EVENT = "home"
REGISTRY_EVENTS = (
    "area_registry_updated",
    "floor_registry_updated",
    "device_registry_updated",
    "entity_registry_updated",
)


class HomeSourceOptions(HomeAssistantConnection):
    intent_stage: str = Field("hassil", description="the intent stage that gets the home")
    cache: str = Field(
        "home-assistant-home.json",
        description="the last good home; relative paths are in the state directory "
        "($STATE_DIRECTORY, else ~/.local/state/voiced)",
    )
    refresh_delay: float = Field(
        2.0,
        ge=0,
        description="registry changes are gathered into one refresh: it starts once none came "
        "for this long",
    )
    refresh_max_delay: float = Field(
        30.0,
        ge=0,
        description="the longest a change waits for its refresh while changes keep coming",
    )
    heartbeat_seconds: float = Field(
        30.0,
        gt=0,
        description="a quiet connection is asked for a `pong` this often; Home Assistant not "
        "answering within `timeout` is logged and the connection made again",
    )
    reconnect_seconds: float = Field(1.0, gt=0, description="first wait after a lost connection")
    reconnect_max_seconds: float = Field(30.0, gt=0, description="longest wait between tries")


def state_directory() -> Path:
    if os.environ.get("STATE_DIRECTORY"):  # systemd's StateDirectory=
        return Path(os.environ["STATE_DIRECTORY"].split(":")[0])
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "voiced"


def cache_path(options: HomeSourceOptions) -> Path:
    path = Path(options.cache).expanduser()
    return path if path.is_absolute() else state_directory() / path


def _entity_ids(entries: Any) -> list[str]:
    return [e["entity_id"] for e in entries or [] if isinstance(e, dict) and "entity_id" in e]


def _home_of(
    floors: Any, areas: Any, devices: Any, extended: Any, states: Any, exposed: Any
) -> dict[str, Any]:
    """``home_from_registries`` of the commands' raw results (in a worker thread)."""
    return home_from_registries(
        floors or [],
        areas or [],
        devices or [],
        [e for e in (extended or {}).values() if e],
        states or [],
        (exposed or {}).get("exposed_entities", {}),
    )


def read_cache(path: Path) -> dict[str, Any] | None:
    """The cached home, or None when there is none (a broken cache is logged, not fatal)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("home-assistant: ignoring the cached home %s: %s", path, exc)
        return None
    return data if isinstance(data, dict) and isinstance(data.get("home"), dict) else None


class HomeAssistantHome:
    """Keeps the recognizer's home equal to Home Assistant's, live."""

    name = "home-assistant"

    def __init__(self, options: HomeSourceOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.home: dict[str, Any] | None = None
        self.source = "none"  # "home-assistant" | "cache" | "none"
        self.loaded_at: float | None = None
        self.socket: HomeAssistantSocket | None = None
        self.refreshes = 0
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self._connected = asyncio.Event()

    def load(self) -> None:
        self.options.access_token()  # no token: fail at start-up, naming the options
        cached = read_cache(cache_path(self.options))
        if cached is not None:
            self.home, self.source, self.loaded_at = cached["home"], "cache", cached.get("saved")

    def close(self) -> None:
        pass

    async def start(self) -> None:
        if self.home is not None:
            await self._apply_off_loop(self.home, "cache")
        self._task = asyncio.create_task(self._run(), name="home-assistant-home")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.socket is not None:
            await self.socket.close()

    async def wait_connected(self, timeout: float) -> None:
        await asyncio.wait_for(self._connected.wait(), timeout)

    # -- the connection --------------------------------------------------------------------

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        delay = self.options.reconnect_seconds
        reported = False
        while True:
            socket = HomeAssistantSocket(self.options)
            up_since: float | None = None
            try:
                await self._connect(socket)
                up_since, reported = loop.time(), False
                await self._follow(socket)
                log.warning(
                    "home-assistant: connection to %s lost (%s); reconnecting in %.1f s",
                    self.options.url, socket.reason, delay,
                )  # fmt: skip
            except asyncio.CancelledError:
                await socket.close()
                raise
            except Exception as exc:
                reported = self._report(exc, reported, delay)
            finally:
                self._connected.clear()
                self.socket = None
                await socket.close()
            await asyncio.sleep(delay)
            stable = (
                up_since is not None and loop.time() - up_since > self.options.reconnect_max_seconds
            )
            delay = (
                self.options.reconnect_seconds
                if stable
                else min(delay * 2, self.options.reconnect_max_seconds)
            )

    async def _connect(self, socket: HomeAssistantSocket) -> None:
        await socket.connect()
        self.socket = socket
        self._changed.clear()
        for event_type in REGISTRY_EVENTS:  # before the refresh: a change during it is followed
            await socket.subscribe(event_type, self._on_registry_change)
        await self.refresh()
        self._connected.set()
        log.info("home-assistant: connected to %s (HA %s)", self.options.url, socket.ha_version)

    def _report(self, exc: Exception, reported: bool, delay: float) -> bool:
        """Log a failed try; the first of an outage is also an error event."""
        message = f"Home Assistant at {self.options.url} unreachable: {exc or type(exc).__name__}"
        if not reported:  # once per outage, not once per try
            self._emit(
                error_event("home-assistant", message, site_id=self._site(), stale=self.source)
            )
        log.warning("home-assistant: %s; retrying in %.1f s", message, delay)
        return True

    async def _follow(self, socket: HomeAssistantSocket) -> None:
        """Until the connection ends: refresh on registry changes, and ping a quiet server."""
        assert socket.closed is not None
        changes = asyncio.create_task(self._follow_changes(), name="home-assistant-changes")
        try:
            while not socket.closed.done():
                await asyncio.wait([socket.closed], timeout=self.options.heartbeat_seconds)
                if not socket.closed.done():
                    await socket.command("ping")  # a HomeAssistantError after `timeout`
        finally:
            changes.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await changes

    def _on_registry_change(self, event: dict[str, Any]) -> None:
        self._changed.set()  # nothing kept per event: a burst costs what one change costs

    async def _follow_changes(self) -> None:
        """One refresh per burst of changes: after ``refresh_delay`` without one (at most
        ``refresh_max_delay`` after the first); changes during a refresh make one more."""
        loop = asyncio.get_running_loop()
        while True:
            await self._changed.wait()
            latest = loop.time() + self.options.refresh_max_delay
            while True:
                self._changed.clear()
                wait = min(self.options.refresh_delay, latest - loop.time())
                if wait <= 0:
                    break
                try:
                    await asyncio.wait_for(self._changed.wait(), wait)
                except TimeoutError:
                    break
            self._changed.clear()
            await self._refresh_quietly()

    async def _refresh_quietly(self) -> None:
        try:
            await self.refresh()
        except Exception as exc:  # the connection loop notices a dead socket itself
            log.warning("home-assistant: refreshing the home failed: %s", exc)

    async def refresh(self) -> dict[str, Any]:
        """Load the registries now, hand the home to the recognizer, cache it (the parsing
        and building in worker threads: a big home costs the event loop nothing)."""
        socket = self.socket
        if socket is None:
            raise ConnectionError("not connected to Home Assistant")
        floors, areas, devices, entries, states, exposed = await asyncio.gather(
            socket.command("config/floor_registry/list"),
            socket.command("config/area_registry/list"),
            socket.command("config/device_registry/list"),
            socket.command("config/entity_registry/list"),
            socket.command("get_states"),
            socket.command("homeassistant/expose_entity/list"),
        )
        ids = await asyncio.to_thread(_entity_ids, entries)
        del entries
        extended = await socket.command("config/entity_registry/get_entries", entity_ids=ids)
        home = await asyncio.to_thread(_home_of, floors, areas, devices, extended, states, exposed)
        del floors, areas, devices, extended, states, exposed
        self.refreshes += 1
        await self._apply_off_loop(home, "home-assistant")
        await asyncio.to_thread(self._save, home)
        return home

    # -- the recognizer and the cache -------------------------------------------------------

    async def _apply_off_loop(self, home: dict[str, Any], source: str) -> None:
        """Hand ``home`` to the recognizer (its indexes built in a worker thread), then say so."""
        recognizer = self.app.stage("intent", self.options.intent_stage) if self.app else None
        if recognizer is None or not hasattr(recognizer, "use_home"):
            raise RuntimeError(
                f"home-assistant: no intent stage {self.options.intent_stage!r} with use_home() "
                "is running; add it to pipeline.intent"
            )
        await asyncio.to_thread(recognizer.use_home, home)
        self._applied(home, source)

    def _applied(self, home: dict[str, Any], source: str) -> None:
        self.home, self.source, self.loaded_at = home, source, time.time()
        data = {
            "source": source,
            "url": self.options.url,
            "entities": len(home.get("entities", [])),
            "areas": len(home.get("areas", [])),
            "floors": len(home.get("floors", [])),
        }
        if source == "cache":
            data["stale"] = True
            data["message"] = "Home Assistant not reached yet: recognizing the cached home"
        log.info("home-assistant: home from %s: %s", source, data)
        self._emit(Event(HOME_EVENT, None, self._site(), data))

    def _save(self, home: dict[str, Any]) -> None:
        path = cache_path(self.options)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            saved = {"saved": time.time(), "url": self.options.url, "home": home}
            tmp.write_text(json.dumps(saved), encoding="utf-8")
            tmp.replace(path)
        except OSError as exc:
            log.warning("home-assistant: cannot cache the home in %s: %s", path, exc)

    def _site(self) -> str:
        return getattr(getattr(self.app, "settings", None), "site_id", "default")

    def _emit(self, event: Event) -> None:
        if self.app is not None:
            self.app.emit(event)
