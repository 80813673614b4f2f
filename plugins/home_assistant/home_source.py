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
        0.5, ge=0, description="seconds to gather registry changes into one refresh"
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
        self._refresh: asyncio.TimerHandle | None = None
        self._tasks: set[asyncio.Future[None]] = set()
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
            self._apply(self.home, "cache")
        self._task = asyncio.create_task(self._run(), name="home-assistant-home")

    async def stop(self) -> None:
        if self._refresh is not None:
            self._refresh.cancel()
        for task in list(self._tasks):
            task.cancel()
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
        delay = self.options.reconnect_seconds
        reported = False
        while True:
            socket = HomeAssistantSocket(self.options)
            try:
                await socket.connect()
                self.socket = socket
                await self.refresh()
                for event_type in REGISTRY_EVENTS:
                    await socket.subscribe(event_type, self._on_registry_change)
                self._connected.set()
                log.info(
                    "home-assistant: connected to %s (HA %s)", self.options.url, socket.ha_version
                )
                delay, reported = self.options.reconnect_seconds, False
                await socket.closed
                log.warning("home-assistant: connection lost; reconnecting")
            except asyncio.CancelledError:
                await socket.close()
                raise
            except Exception as exc:
                message = f"Home Assistant at {self.options.url} unreachable: {exc}"
                if not reported:  # once per outage, not once per try
                    self._emit(error_event("home-assistant", message, stale=self.source))
                    reported = True
                log.warning("home-assistant: %s; retrying in %.0f s", message, delay)
            finally:
                self._connected.clear()
                await socket.close()
                self.socket = None
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.options.reconnect_max_seconds)

    def _on_registry_change(self, event: dict[str, Any]) -> None:
        if self._refresh is not None:
            self._refresh.cancel()
        self._refresh = asyncio.get_running_loop().call_later(
            self.options.refresh_delay, self._start_refresh
        )

    def _start_refresh(self) -> None:
        task = asyncio.ensure_future(self._refresh_quietly())
        self._tasks.add(task)  # a task nobody holds may be collected before it runs
        task.add_done_callback(self._tasks.discard)

    async def _refresh_quietly(self) -> None:
        try:
            await self.refresh()
        except Exception as exc:  # the connection loop notices a dead socket itself
            log.warning("home-assistant: refreshing the home failed: %s", exc)

    async def refresh(self) -> dict[str, Any]:
        """Load the registries now, hand the home to the recognizer, cache it."""
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
        ids = [e["entity_id"] for e in entries]
        extended = await socket.command("config/entity_registry/get_entries", entity_ids=ids)
        home = home_from_registries(
            floors,
            areas,
            devices,
            [e for e in (extended or {}).values() if e],
            states,
            (exposed or {}).get("exposed_entities", {}),
        )
        self.refreshes += 1
        self._apply(home, "home-assistant")
        self._save(home)
        return home

    # -- the recognizer and the cache -------------------------------------------------------

    def _apply(self, home: dict[str, Any], source: str) -> None:
        recognizer = self.app.stage("intent", self.options.intent_stage) if self.app else None
        if recognizer is None or not hasattr(recognizer, "use_home"):
            raise RuntimeError(
                f"home-assistant: no intent stage {self.options.intent_stage!r} with use_home() "
                "is running; add it to pipeline.intent"
            )
        recognizer.use_home(home)
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
