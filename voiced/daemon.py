"""Lifecycle: load and warm up, report readiness, watchdog, signals, reload, clean exit."""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from voiced.building import check_config
from voiced.config import ConfigError, Settings, load_settings
from voiced.events import Reload
from voiced.logs import set_level
from voiced.memory import TRIM_EVERY_S, can_trim, fix_thresholds, give_back
from voiced.pipeline import Pipeline
from voiced.plugins import PluginHost, check_hooks, load_plugins
from voiced.sdnotify import Notifier, watchdog_interval

log = logging.getLogger(__name__)

LIVE_PIPELINE_KEYS = ("stage_timeout", "shutdown_grace", "not_understood")
LIVE_SETTINGS = ("log_level", "vad", "conversation", "arbiter", "speakers")
LIVE_SETTINGS += tuple(f"pipeline.{key}" for key in LIVE_PIPELINE_KEYS)
"""The settings a reload (SIGHUP) applies at once; the only list of them (docs/service.md)."""
STOP_MARGIN_S = 15.0
"""Seconds a stop may take beyond ``pipeline.shutdown_grace`` before the process ends itself
(below systemd's TimeoutStopSec=30 with the default 10 s grace)."""
RESTART_SETTINGS = ("site_id", "language", "sites", "plugins")
"""Top-level settings whose change a reload reports as needing a restart (so do stages)."""


def prepare(
    config: str | Path | None,
    overrides: dict[str, Any] | None = None,
    extra_plugins: list[tuple[str, Any]] | None = None,
    host: PluginHost | None = None,
) -> tuple[Settings, PluginHost]:
    """Load settings and plugins and check that every configured stage and option is valid.

    ``host`` reuses plugins already loaded (the CLI loads them once for its subcommands).
    """
    settings = load_settings(config, **(overrides or {}))
    if host is None or settings.plugins.disabled:
        host = load_plugins(settings.plugins.disabled, extra_plugins or [])
    else:
        for name, obj in extra_plugins or []:
            host.pm.register(obj, name=name)
        check_hooks(host.pm)
    check_config(host, settings)
    return settings, host


class Daemon:
    """Runs the pipeline as a service until its sources end or a signal stops it."""

    def __init__(
        self,
        config: str | Path | None = None,
        overrides: dict[str, Any] | None = None,
        extra_plugins: list[tuple[str, Any]] | None = None,
        notifier: Notifier | None = None,
        host: PluginHost | None = None,
        stop_deadline: bool = False,
    ) -> None:
        """``stop_deadline``: a stop signal also arms ``arm_stop_deadline`` (the CLI's daemon,
        whose process ends with the run; never a daemon inside another program)."""
        self.config = config
        self.stop_deadline = stop_deadline
        self.overrides = overrides or {}
        self.settings, self.host = prepare(config, self.overrides, extra_plugins, host)
        self.notifier = notifier or Notifier()
        self.pipeline = Pipeline(self.settings, self.host)
        self.stop_event: asyncio.Event | None = None

    async def run(self) -> int:
        self.stop_event = asyncio.Event()
        self._install_signals()
        fix_thresholds()  # before the models load: their peaks are mapped apart (memory.py)
        self.pipeline.build()
        self.notifier.status("loading models")
        watchdog = asyncio.create_task(self._watchdog())
        trimmer = asyncio.create_task(self._give_back_memory())
        try:
            await self.pipeline.start()
            sites = ", ".join(s.site_id for s in self.pipeline.sources) or "no local source"
            self.notifier.ready(f"ready: {sites}")
            log.info("ready (%s)", sites)
            await self.pipeline.run(self.stop_event)
            self.notifier.stopping()
            self.notifier.status("stopping")
        finally:
            trimmer.cancel()  # before the stop shuts the executor it runs in
            await self.pipeline.stop()
            watchdog.cancel()
        return 0

    def request_stop(self) -> None:
        if self.stop_event is not None:
            self.stop_event.set()

    async def _watchdog(self) -> None:
        """Ping systemd from the event loop itself, so a hung loop gets the service restarted."""
        interval = watchdog_interval()
        if interval is None:
            return
        while True:
            self.notifier.watchdog()
            await asyncio.sleep(interval)

    async def _give_back_memory(self) -> None:
        """Every TRIM_EVERY_S, freed heap memory back to the system (voiced/memory.py), in a
        worker thread: RSS then follows the memory in use instead of its highest peaks."""
        if not can_trim():
            return
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(TRIM_EVERY_S)
            took = await loop.run_in_executor(self.pipeline.executor, give_back)
            if took > 0.05:
                log.debug("malloc_trim took %.0f ms", took * 1000)

    def _install_signals(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_stop_signal, sig)
        loop.add_signal_handler(signal.SIGHUP, self.reload)

    def _on_stop_signal(self, sig: signal.Signals) -> None:
        name = signal.Signals(sig).name
        if self.stop_deadline:
            seconds = self.pipeline.settings.pipeline.shutdown_grace + STOP_MARGIN_S
            log.info("%s: stopping (at most %g s)", name, seconds)
            arm_stop_deadline(seconds)
        else:
            log.info("%s: stopping", name)
        self.request_stop()

    def reload(self) -> dict[str, list[str]]:
        """Re-read the config; apply what can change live, say clearly what needs a restart."""
        self.notifier.reloading()
        site_id = self.pipeline.settings.site_id
        try:
            new = load_settings(self.config, **self.overrides)
            check_config(self.host, new)
            result = apply_live(self.pipeline, new)
        except Exception as exc:  # ConfigError, or a bug: either way READY=1 must follow
            if not isinstance(exc, ConfigError):
                log.exception("reload failed")
            log.error("reload failed, keeping the running config: %s", exc)
            self.pipeline.emit(Reload(ok=False, error=str(exc)).event(None, site_id))
            self.notifier.ready("reload failed; running the previous config")
            return {"applied": [], "needs_restart": []}
        if result["needs_restart"]:
            log.warning(
                "reload: %s changed; restart voiced to apply (running on the old values)",
                ", ".join(result["needs_restart"]),
            )
        log.info("reload: applied %s", ", ".join(result["applied"]) or "nothing (no changes)")
        self.pipeline.emit(Reload(ok=True, **result).event(None, site_id))
        self.notifier.ready("reloaded")
        return result


def arm_stop_deadline(seconds: float) -> None:
    """Should the process still be alive ``seconds`` from now (a hung device, a stuck thread,
    a library that hangs at exit), print every thread's stack to stderr (the journal) and exit
    with status 1. Runs on faulthandler's own C thread: it fires even while Python itself hangs.
    """
    faulthandler.dump_traceback_later(seconds, exit=True)


def apply_live(pipeline: Pipeline, new: Settings) -> dict[str, list[str]]:
    """Apply to the running pipeline what of ``new`` can change live; name what needs a
    restart ({"applied": [...], "needs_restart": [...]})."""
    old = pipeline.settings
    applied: list[str] = []
    for name, apply in _LIVE_APPLIERS:
        if getattr(new, name) != getattr(old, name):
            apply(pipeline, new)
            applied.append(name)
    for key in LIVE_PIPELINE_KEYS:
        if getattr(new.pipeline, key) != getattr(old.pipeline, key):
            setattr(old.pipeline, key, getattr(new.pipeline, key))
            applied.append(f"pipeline.{key}")
    return {"applied": applied, "needs_restart": _needs_restart(old, new)}


def _apply_log_level(pipeline: Pipeline, new: Settings) -> None:
    """Switch to the new log level."""
    set_level(new.log_level)
    pipeline.settings.log_level = new.log_level


def _apply_vad(pipeline: Pipeline, new: Settings) -> None:
    """Give every site's segmenter the new VAD settings."""
    pipeline.settings.vad = new.vad
    for site in pipeline.sites.values():
        site.segmenter.config = new.vad


def _apply_conversation(pipeline: Pipeline, new: Settings) -> None:
    """Give every site the new conversation settings; a changed ``muted`` mutes or unmutes."""
    old = pipeline.settings
    muted_changed = new.conversation.muted != old.conversation.muted
    old.conversation = new.conversation
    for site in pipeline.sites.values():
        site.conversation = new.conversation
        if muted_changed:  # only a changed file mutes or unmutes; a mute command stays
            site.set_muted(new.conversation.muted, reason="config")
    if muted_changed:
        pipeline.muted_default = new.conversation.muted


def _apply_arbiter(pipeline: Pipeline, new: Settings) -> None:
    """Give the wake arbiter its new settings."""
    pipeline.settings.arbiter = new.arbiter
    pipeline.arbiter.config = new.arbiter


def _apply_speakers(pipeline: Pipeline, new: Settings) -> None:
    """Reconfigure speaker identification with the new settings."""
    pipeline.settings.speakers = new.speakers
    if pipeline.speakers is not None:
        pipeline.speakers.reconfigure(new.speakers)


# the settings applied live, in order, each with what applies it
_LIVE_APPLIERS: tuple[tuple[str, Callable[[Pipeline, Settings], None]], ...] = (
    ("log_level", _apply_log_level),
    ("vad", _apply_vad),
    ("conversation", _apply_conversation),
    ("arbiter", _apply_arbiter),
    ("speakers", _apply_speakers),
)


def _needs_restart(old: Settings, new: Settings) -> list[str]:
    """The changed settings that only a restart applies."""
    needs_restart = []
    old_pipeline = old.pipeline.model_dump(exclude=set(LIVE_PIPELINE_KEYS))
    new_pipeline = new.pipeline.model_dump(exclude=set(LIVE_PIPELINE_KEYS))
    needs_restart += [f"pipeline.{k}" for k in new_pipeline if new_pipeline[k] != old_pipeline[k]]
    if new.stages != old.stages:
        needs_restart.append("stages")
    for key in RESTART_SETTINGS:
        if getattr(new, key) != getattr(old, key):
            needs_restart.append(key)
    return needs_restart
