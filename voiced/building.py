"""Turning configured stage names into stage objects, validating each plugin's options."""

from __future__ import annotations

import os
from typing import Any

from pydantic import ValidationError

from voiced.config import ConfigError, Settings, format_validation_error, stage_key, stage_value
from voiced.plugins import PluginHost
from voiced.stages import STAGE_KINDS


def unknown_stage_message(host: PluginHost, kind: str, name: str, key: str) -> str:
    available = ", ".join(host.stage_names(kind)) or "none"
    message = f"{key}: no {kind} stage named {name!r}; available: {available}"
    failed = [f"{p.name} ({p.error})" for p in host.failed()]
    if failed:
        message += f". Plugins that failed to load: {'; '.join(failed)}"
    return message


def validate_options(host: PluginHost, settings: Settings, kind: str, name: str, key: str) -> Any:
    """The stage's options, validated by its plugin's model; ConfigError names the key."""
    spec = host.stage_spec(kind, name)
    where = str(settings.config_file or "config")
    if spec is None:
        raise ConfigError(f"{where}: {unknown_stage_message(host, kind, name, key)}")
    raw = settings.stage_options(kind, name)
    value = stage_value(name)
    if value:  # "wyoming:gpu-box:10300": the value sets the stage's shorthand option
        where = _source_of(settings, key)
        if not spec.shorthand or spec.options is None:
            raise ConfigError(f"{where}: {key}: stage {spec.name!r} takes no ':VALUE' ({name!r})")
        raw = {**raw, spec.shorthand: value}
    if spec.options is None:
        if raw:
            raise ConfigError(f"{where}: stages.{kind}.{name}: this stage takes no options")
        return None
    try:
        return spec.options.model_validate(raw)
    except ValidationError as exc:
        if value and any(err["loc"][:1] == (spec.shorthand,) for err in exc.errors()):
            reason = next(e["msg"] for e in exc.errors() if e["loc"][:1] == (spec.shorthand,))
            raise ConfigError(f"{where}: {key}: {name!r}: {reason}") from None
        block = f"stages.{kind}.{stage_key(name)}"
        raise ConfigError(format_validation_error(exc, where, block)) from None


def _source_of(settings: Settings, key: str) -> str:
    """The environment variable that set ``key`` (``pipeline.asr``), else the config file."""
    env_name = "VOICED_" + key.upper().replace(".", "__")
    if env_name in os.environ:
        return f"environment {env_name}"
    return str(settings.config_file or "config")


def configured_stages(settings: Settings) -> list[tuple[str, str, str]]:
    """(kind, name, config key) for every stage the pipeline section names."""
    p = settings.pipeline
    out: list[tuple[str, str, str]] = []
    for kind, names in (
        ("source", p.source),
        ("wake", p.wake),
        ("vad", [p.vad]),
        ("asr", p.asr),
        ("speaker", p.speaker),
        ("intent", p.intent),
        ("handler", p.handler),
        ("tts", p.tts),
        ("sink", p.sink),
        ("service", p.service),
    ):
        out.extend((kind, name, f"pipeline.{kind}") for name in names)
    return out


def check_config(host: PluginHost, settings: Settings) -> None:
    """Fail start-up early: every named stage exists and every option block is valid."""
    for kind, name, key in configured_stages(settings):
        validate_options(host, settings, kind, name, key)
    where = str(settings.config_file or "config")
    for kind, blocks in settings.stages.items():
        if kind not in STAGE_KINDS:
            raise ConfigError(f"{where}: stages.{kind}: unknown stage kind")
        for name in blocks:
            if host.stage_spec(kind, name) is None:
                raise ConfigError(
                    f"{where}: {unknown_stage_message(host, kind, name, f'stages.{kind}.{name}')}"
                )


def make_stage(host: PluginHost, settings: Settings, kind: str, name: str, app: Any) -> Any:
    options = validate_options(host, settings, kind, name, f"pipeline.{kind}")
    spec = host.stage_spec(kind, name)
    assert spec is not None  # validate_options raised otherwise
    stage = spec.factory(options, app)
    stage.stage_name = name
    return stage
