"""Finding Home Assistant and checking its URL and token against its API.

The URL and token are checked over REST first (each failure has its own words: unreachable,
not Home Assistant, token refused); the areas and exposed entities are then counted by the
``home-assistant`` plugin's own home source (the same code the daemon runs), reached through
the plugin host, so "I see 12 areas and 87 exposed entities" is what voiced will know.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from voiced.events import Event
from voiced.plugins import PluginHost
from voiced.setup.answers import HomeAssistantAnswer
from voiced.setup.console import Console, SetupError

CANDIDATES = ("http://homeassistant.local:8123", "http://homeassistant:8123",
              "http://127.0.0.1:8123")  # fmt: skip
TOKEN_ENV = "HOME_ASSISTANT_TOKEN"
TOKEN_HELP = "make one in Home Assistant: your profile > Security > Long-lived access tokens"


def _get(url: str, token: str | None, timeout: float) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, reply.read(1 << 20)
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def looks_like_home_assistant(url: str, timeout: float = 1.5) -> bool:
    """Whether ``url`` answers as Home Assistant's API does without a token (401)."""
    try:
        status, _ = _get(f"{url}/api/", None, timeout)
    except (OSError, ValueError):
        return False
    return status == 401


def find_home_assistant(candidates: tuple[str, ...] = CANDIDATES) -> str | None:
    """The first usual address where Home Assistant answers."""
    return next((url for url in candidates if looks_like_home_assistant(url)), None)


def check_token(url: str, token: str, timeout: float = 10.0) -> str:
    """Home Assistant's version; SetupError saying whether it is unreachable, not Home
    Assistant, or refusing the token."""
    if not url.startswith(("http://", "https://")):
        raise SetupError(f"{url!r} is not a URL: use http://HOST:8123 or https://HOST")
    try:
        status, body = _get(f"{url}/api/config", token, timeout)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SetupError(
            f"Home Assistant at {url} is unreachable ({reason}): is it running, and is the "
            "address right?"
        ) from None
    if status in (401, 403):
        raise SetupError(f"Home Assistant at {url} refused the token ({status}): {TOKEN_HELP}")
    try:
        config = json.loads(body) if status == 200 else None
    except ValueError:
        config = None
    if not isinstance(config, dict) or "version" not in config:
        raise SetupError(f"{url} answered ({status}) but not as Home Assistant's API does")
    return str(config["version"])


def mqtt_broker_of(url: str, token: str) -> str | None:
    """The host of the broker Home Assistant's MQTT integration uses (its entry's title)."""
    try:
        status, body = _get(f"{url}/api/config/config_entries/entry?domain=mqtt", token, 10.0)
        entries = json.loads(body) if status == 200 else []
    except (OSError, ValueError):
        return None
    titles = [e.get("title") for e in entries if isinstance(e, dict) and e.get("domain") == "mqtt"]
    return next((str(t) for t in titles if t), None)


class _Collector:
    """Stands in for the daemon toward the plugin's home source: keeps the home it is given
    and the errors it reports."""

    settings = None

    def __init__(self) -> None:
        self.home: dict[str, Any] | None = None
        self.errors: list[str] = []
        self.ready = asyncio.Event()

    def stage(self, kind: str, name: str | None = None) -> Any:
        return self

    def use_home(self, home: dict[str, Any]) -> None:
        self.home = home

    def emit(self, event: Event) -> None:
        if event.type == "error":
            self.errors.append(str(event.data.get("message", event.data)))
            self.ready.set()


def count_home(host: PluginHost, url: str, token: str, timeout: float = 30.0) -> tuple[int, int]:
    """(areas, exposed entities) as voiced's home-assistant plugin loads them."""
    spec = host.stage_spec("service", "home-assistant")
    if spec is None or spec.options is None:
        raise SetupError("the home-assistant plugin is not installed or disabled")
    with tempfile.TemporaryDirectory(prefix="voiced-setup-") as folder:
        options = spec.options.model_validate(
            {"url": url, "token": token, "cache": str(Path(folder) / "home.json")}
        )
        collector = _Collector()
        source = spec.factory(options, collector)
        home = asyncio.run(_load_once(source, collector, timeout))
    return len(home.get("areas", [])), len(home.get("entities", []))


async def _load_once(source: Any, collector: _Collector, timeout: float) -> dict[str, Any]:
    source.load()
    await source.start()
    try:
        waiter = asyncio.create_task(source.wait_connected(timeout))
        failed = asyncio.create_task(collector.ready.wait())
        await asyncio.wait({waiter, failed}, timeout=timeout, return_when="FIRST_COMPLETED")
        for task in (waiter, failed):
            task.cancel()
    finally:
        await source.stop()
    if collector.home is None:
        why = collector.errors[0] if collector.errors else f"no answer in {timeout:.0f} s"
        raise SetupError(f"loading the home from Home Assistant failed: {why}")
    return collector.home


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


def read_token(console: Console, token_file: str | None, first: bool) -> str:
    """The token: ``--ha-token-file``, else $HOME_ASSISTANT_TOKEN, else asked (hidden)."""
    if first and token_file:
        try:
            token = Path(token_file).expanduser().read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise SetupError(f"--ha-token-file {token_file}: {exc.strerror}") from None
        if not token:
            raise SetupError(f"--ha-token-file {token_file} is empty")
        console.say(f"Home Assistant token: from {token_file}")
        return token
    if first and os.environ.get(TOKEN_ENV, "").strip():
        console.say(f"Home Assistant token: from ${TOKEN_ENV}")
        return os.environ[TOKEN_ENV].strip()
    return console.ask(f"Long-lived access token ({TOKEN_HELP})", "--ha-token-file", secret=True)


def ask_home_assistant(
    console: Console,
    host: PluginHost,
    url: str | None,
    token_file: str | None,
    wanted: bool | None,
) -> HomeAssistantAnswer | None:
    """Find or ask for Home Assistant; check URL and token; count what voiced will know."""
    console.heading("Home Assistant")
    found = None if url else find_home_assistant()
    if found:
        console.ok(f"found Home Assistant at {found}")
    given = wanted if wanted is not None else (True if url else None)
    use = console.confirm("Use Home Assistant as the home?", "--no-home-assistant", given,
                          bool(found))  # fmt: skip
    if not use:
        console.say("  voiced will know the time and timers; a home.yaml can name your devices")
        return None

    def attempt(first: bool) -> HomeAssistantAnswer | None:
        address = console.ask("Home Assistant URL ('none': go on without it)", "--ha-url",
                              url if first else None,
                              found or "http://homeassistant.local:8123").rstrip("/")  # fmt: skip
        if address.lower() == "none":
            return None
        token = read_token(console, token_file, first)
        version = check_token(address, token)
        areas, entities = count_home(host, address, token)
        console.ok(f"Home Assistant {version}: I see {plural(areas, 'area')} and "
                   f"{plural(entities, 'exposed entity', 'exposed entities')}")  # fmt: skip
        return HomeAssistantAnswer(address, token, version, areas, entities,
                                   mqtt_broker_of(address, token))  # fmt: skip

    return console.until_valid(attempt)
