"""The plugin manager: built-ins in a fixed order, then third-party entry points, a block list."""

from __future__ import annotations

import importlib.metadata
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pluggy

from voiced import hookspecs
from voiced.config import normalize_name, stage_base_name
from voiced.stages import STAGE_KINDS, StageSpec

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "voiced"
DISABLE_ENV = "VOICED_DISABLE_PLUGINS"
BUILTIN_ORDER = (
    "log_events",
    "io_wav",
    "vad_webrtc",
    "wake_openwakeword",
    "asr_whisper",
    "speaker_ge2e",
    "intent_hassil",
    "intent_llm",
    "handle_builtin",
    "handle_mqtt",
    "tts_piper",
    "tts_vits",
    "tts_espeak",
    "io_sounddevice",
    "mqtt",
    "wyoming",
    "home_assistant",
    "remote",
    "asr_pool",
    "esphome",
)


class PluginError(RuntimeError):
    """A plugin that cannot be used: bad hook names, duplicate stages."""


@dataclass
class PluginInfo:
    name: str
    module: str
    distribution: str
    version: str
    builtin: bool
    status: str = "loaded"  # loaded | disabled | failed
    error: str = ""
    stages: list[str] = field(default_factory=list)


@dataclass
class PluginHost:
    """A pluggy manager plus what was loaded, from where, and the stages on offer."""

    pm: pluggy.PluginManager
    plugins: list[PluginInfo]
    stages: dict[tuple[str, str], StageSpec]

    def stage_spec(self, kind: str, name: str) -> StageSpec | None:
        return self.stages.get((kind, stage_base_name(name)))

    def stage_names(self, kind: str) -> list[str]:
        return sorted(spec.name for (k, _), spec in self.stages.items() if k == kind)

    def failed(self) -> list[PluginInfo]:
        return [p for p in self.plugins if p.status == "failed"]

    def hooks_of(self, plugin_name: str) -> list[str]:
        plugin = self.pm.get_plugin(plugin_name)
        if plugin is None:
            return []
        return sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or [])


def new_plugin_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("voiced")
    pm.add_hookspecs(hookspecs)
    return pm


def disabled_names(configured: Iterable[str] = ()) -> set[str]:
    """Plugins blocked by config (``plugins.disabled``) or ``VOICED_DISABLE_PLUGINS=a,b``."""
    names = {n for n in configured}
    names |= {n for n in os.environ.get(DISABLE_ENV, "").split(",")}
    return {normalize_name(n) for n in names if n.strip()}


def _ordered(entry_points: Iterable[importlib.metadata.EntryPoint]) -> list[Any]:
    def key(ep: importlib.metadata.EntryPoint) -> tuple[int, int, str]:
        builtin = _is_builtin(ep)
        rank = BUILTIN_ORDER.index(ep.name) if builtin and ep.name in BUILTIN_ORDER else 999
        return (0 if builtin else 1, rank, ep.name)

    return sorted(entry_points, key=key)


def _is_builtin(ep: importlib.metadata.EntryPoint) -> bool:
    return ep.dist is not None and ep.dist.name == "voiced"


def load_plugins(disabled: Iterable[str] = (), extra: Iterable[tuple[str, Any]] = ()) -> PluginHost:
    """Load built-ins, then third-party entry points; then ``extra`` (name, object) pairs.

    A plugin that fails to import is recorded (``voiced plugins`` shows why) and skipped; a
    hookimpl naming no known hook fails start-up.
    """
    pm = new_plugin_manager()
    blocked = disabled_names(disabled)
    infos: list[PluginInfo] = []
    eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    for ep in _ordered(eps):
        dist = ep.dist
        info = PluginInfo(
            name=ep.name,
            module=ep.value,
            distribution=dist.name if dist else "?",
            version=dist.version if dist else "?",
            builtin=_is_builtin(ep),
        )
        infos.append(info)
        if normalize_name(ep.name) in blocked:
            info.status = "disabled"
            continue
        try:
            module = ep.load()
        except Exception as exc:  # a broken third-party package must not take the daemon down
            info.status, info.error = "failed", f"{type(exc).__name__}: {exc}"
            log.warning("plugin %s (%s) failed to load: %s", ep.name, ep.value, info.error)
            continue
        if pm.get_plugin(ep.name) is None:
            pm.register(module, name=ep.name)
    known = {normalize_name(info.name) for info in infos}
    for name in sorted(blocked - known):
        log.warning(
            "plugins.disabled names %r, which is no installed plugin (installed: %s)",
            name,
            ", ".join(sorted(known)),
        )
    for name, obj in extra:
        infos.append(PluginInfo(name, type(obj).__module__, "(in process)", "", False))
        pm.register(obj, name=name)
    check_hooks(pm)
    return PluginHost(pm, infos, collect_stages(pm, infos))


def check_hooks(pm: pluggy.PluginManager) -> None:
    """Fail with a clear message when a plugin implements a hook voiced does not define, or
    wraps a hook voiced calls one implementation at a time (``hookspecs.ONE_AT_A_TIME``)."""
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        known = ", ".join(sorted(n for n in dir(hookspecs) if n.startswith("voiced_")))
        raise PluginError(f"plugin {exc.plugin!r}: {exc}. Known hooks: {known}") from None
    for name in hookspecs.ONE_AT_A_TIME:
        for impl in getattr(pm.hook, name).get_hookimpls():
            if impl.hookwrapper or impl.wrapper:
                raise PluginError(
                    f"plugin {impl.plugin_name!r}: {name} cannot be a hook wrapper: voiced "
                    "calls each implementation on its own (see voiced/hookspecs.py); "
                    "drop wrapper=True/hookwrapper=True"
                )


def collect_stages(
    pm: pluggy.PluginManager, infos: list[PluginInfo]
) -> dict[tuple[str, str], StageSpec]:
    """Ask every plugin for its stages, remembering which plugin offered each."""
    stages: dict[tuple[str, str], StageSpec] = {}
    by_name = {info.name: info for info in infos}
    for impl in pm.hook.voiced_register_stages.get_hookimpls():
        impl.function(register=_registrar(impl.plugin_name, stages, by_name))
    return stages


def _registrar(
    plugin: str, stages: dict[tuple[str, str], StageSpec], infos: dict[str, PluginInfo]
) -> Callable[..., None]:
    def register(
        kind: str,
        name: str,
        factory: Callable[..., Any],
        options: Any = None,
        description: str = "",
        shorthand: str | None = None,
    ) -> None:
        if kind not in STAGE_KINDS:
            raise PluginError(
                f"plugin {plugin!r} registers unknown stage kind {kind!r}; "
                f"kinds are {', '.join(STAGE_KINDS)}"
            )
        key = (kind, normalize_name(name))
        if key in stages:
            # Later plugins (third-party) may replace a built-in stage of the same name.
            log.info(
                "%s stage %r from %s replaces the one from %s",
                kind,
                name,
                plugin,
                stages[key].plugin,
            )
        stages[key] = StageSpec(kind, name, factory, options, plugin, description, shorthand)
        if plugin in infos:
            infos[plugin].stages.append(f"{kind}:{name}")

    return register
