"""Settings: a TOML file plus ``VOICED_*`` environment overrides, validated with pydantic.

A bad value fails start-up with the file, the key and the reason (``ConfigError``).
"""

from __future__ import annotations

import json
import logging
import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
)

from voiced.arbiter import ArbiterConfig
from voiced.permissions import SpeakersConfig
from voiced.redact import redact_urls

log = logging.getLogger(__name__)

DEFAULT_CONFIG_PATHS = (Path("config/voiced.toml"), Path("/etc/voiced/voiced.toml"))
SECRET_WORDS = ("password", "secret", "token", "api_key", "apikey", "key_file", "keyfile")


EXIT_CONFIG = 2
"""Exit status of a configuration error (systemd must not restart into it in a loop)."""


class ConfigError(ValueError):
    """A configuration problem, naming the file, the key and the reason."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class PipelineConfig(Strict):
    """Which stage serves each step, by name; asr and tts are ordered fallback chains."""

    source: list[str] = ["file"]
    wake: list[str] = []
    vad: str = "webrtc"
    asr: list[str] = ["whisper-ctranslate2"]
    speaker: list[str] = Field(
        [], description="speaker encoder that tells who spoke (e.g. ge2e); empty: nobody is told"
    )
    intent: list[str] = ["hassil"]
    handler: list[str] = ["builtin", "responses"]
    tts: list[str] = ["piper"]
    sink: list[str] = []
    service: list[str] = ["log"]
    asr_queue_size: int = Field(8, ge=1, le=1000)
    overload_policy: Literal["drop-oldest", "block"] = "drop-oldest"
    asr_workers: int = Field(1, ge=1, le=16)
    stage_timeout: float = Field(60.0, gt=0, description="seconds one stage call may take")
    engine_retry_seconds: float = Field(
        300.0, gt=0, description="an engine that failed sits out this long, then is tried again"
    )
    shutdown_grace: float = Field(10.0, ge=0, description="seconds a run in flight may finish")
    not_understood: str = "Sorry, I didn't understand that."
    cache_fixed_answers: bool = Field(
        True,
        description="after start-up, synthesize the handlers' fixed answers (\"Turned on the "
        'lights") while idle, so they play at once',
    )
    anticipate_answers: bool = Field(
        True,
        description="synthesize ahead of need, while idle, the answers the handlers expect "
        "to give soon (the time this minute and the next, common timers, the home's states)",
    )
    max_say_chars: int = Field(
        5000,
        ge=1,
        le=1_000_000,
        description="longest text a say command or a Wyoming synthesize may ask to speak "
        "(~5 minutes of speech); longer is refused with an error event",
    )
    max_commands_per_site: int = Field(
        16,
        ge=1,
        le=10_000,
        description="say commands queued or speaking at one site; more are refused",
    )

    @field_validator("asr", "tts")
    @classmethod
    def _not_empty(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("needs at least one engine")
        return value


class VadConfig(Strict):
    """Utterance segmentation; defaults as Home Assistant's."""

    threshold: float = Field(0.5, ge=0.0, le=1.0)
    speech_seconds: float = Field(0.3, gt=0, description="speech needed to start a command")
    silence_seconds: float = Field(0.7, gt=0, description="silence that ends a command")
    max_command_seconds: float = Field(15.0, gt=0)
    pre_roll_seconds: float = Field(0.3, ge=0, description="audio kept from before speech start")
    early_commit: bool = Field(
        True, description="transcribe during a pause; end early on a complete command"
    )
    early_commit_pause: float = Field(
        0.25, gt=0, description="pause inside an utterance after which it may end early"
    )
    speculate_pause: float = Field(
        0.1,
        gt=0,
        description="pause that starts the speculative transcript (at most early_commit_pause): "
        "it is ready when the commit may come",
    )
    early_commit_recognizers: list[str] = Field(
        ["hassil"], description="recognizers whose strict template matches may commit early"
    )


class ConversationConfig(Strict):
    muted: bool = False
    wake_timeout: float = Field(8.0, gt=0, description="seconds of no speech after a wake word")
    barge_in: Literal["wake", "speech", "off"] = "wake"
    follow_up: Literal["question", "always", "off"] = "question"
    follow_up_seconds: float = Field(5.0, ge=0)
    duck_volume: float = Field(
        0.2, ge=0, le=1, description="media's volume while the site listens, thinks or speaks"
    )


class PluginsConfig(Strict):
    disabled: list[str] = []


def _language_tag(value: Any) -> Any:
    from voiced.languages import LanguageError, canonical

    if not isinstance(value, str):
        return value
    try:
        return canonical(value)
    except LanguageError as exc:
        raise ValueError(str(exc)) from None


class SiteConfig(Strict):
    """One site's own settings (``[sites.<site_id>]``): a satellite in the kids' room may
    speak another language than the house."""

    language: str | None = Field(
        None, description="this site's language (en, de, zh-CN, ...); unset: the top-level one"
    )

    _tag = field_validator("language", mode="before")(_language_tag)


class Settings(BaseSettings):
    """The whole effective configuration of the daemon."""

    model_config = SettingsConfigDict(
        env_prefix="VOICED_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_assignment=True,
    )

    site_id: str = "default"
    language: str = Field(
        "en", description="the language every stage uses (en, de, zh-CN, pt-BR, ...)"
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    pipeline: PipelineConfig = PipelineConfig()
    vad: VadConfig = VadConfig()
    conversation: ConversationConfig = ConversationConfig()
    plugins: PluginsConfig = PluginsConfig()
    arbiter: ArbiterConfig = ArbiterConfig()
    """Multi-room de-duplication: one wake word heard in several rooms starts one run."""
    speakers: SpeakersConfig = SpeakersConfig()
    """Who is speaking and what each person may do (``pipeline.speaker`` names the encoder)."""
    stages: dict[str, dict[str, dict[str, Any]]] = {}
    """Options per stage: ``[stages.<kind>.<name>]``, validated by the plugin's own model."""
    sites: dict[str, SiteConfig] = {}
    """Per-site settings, ``[sites.<site_id>]`` (a satellite's site id is its name)."""
    voices: dict[str, str] = {}
    """``[voices]``: language -> a voice of the first TTS engine for answers in that language
    (``de = "de_DE-thorsten-medium"``, a Piper voice name or path); see voiced/voices.py."""

    config_file: Path | None = Field(None, exclude=True)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    _tag = field_validator("language", mode="before")(_language_tag)

    def language_of(self, site_id: str | None) -> str:
        """The language spoken at a site: its own, else the top-level ``language``."""
        site = self.sites.get(site_id or "")
        return site.language if site is not None and site.language else self.language

    def languages(self) -> list[str]:
        """Every language the config uses, the top-level one first."""
        found = [self.language, *(s.language for s in self.sites.values() if s.language)]
        return list(dict.fromkeys(found))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The file's values arrive as init kwargs; the environment overrides them.
        return (StageEnvSource(settings_cls), init_settings)

    def stage_options(self, kind: str, name: str) -> dict[str, Any]:
        """Raw options for a stage; ``a-b`` and ``a_b`` name the same stage (env vars)."""
        key = stage_key(name)
        wanted = {normalize_name(key), stage_base_name(key)}
        merged: dict[str, Any] = {}
        for key in sorted(self.stages.get(kind, {}), key=lambda k: "#" in k):
            if normalize_name(key) in wanted:
                merged.update(self.stages[kind][key])
        return merged


class StageEnvSource(EnvSettingsSource):
    """``VOICED_*`` variables; under ``stages`` a JSON list or object is decoded too.

    Stage options are typed by each plugin, not here, so pydantic-settings sees ``Any`` and
    would pass ``VOICED_STAGES__INTENT__HASSIL__SENTENCES='[]'`` on as the string ``"[]"``.
    """

    def __call__(self) -> dict[str, Any]:
        data = super().__call__()
        if isinstance(data.get("stages"), dict):
            data["stages"] = _decode_json_leaves(data["stages"])
        return data


def _decode_json_leaves(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _decode_json_leaves(item) for key, item in value.items()}
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value  # the stage's own model says what is wrong with it
    return value


def normalize_name(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def stage_key(name: str) -> str:
    """``wyoming#gpu:host:port`` -> ``wyoming#gpu``: the name without its ``:VALUE``."""
    return name.partition(":")[0].strip()


def stage_value(name: str) -> str:
    """``wyoming:host:port`` -> ``host:port``: what the stage's shorthand option is set to
    (the same ``NAME:VALUE`` as ``--asr wyoming:host:port``); empty when none."""
    return name.partition(":")[2].strip()


def stage_base_name(name: str) -> str:
    """``wyoming#gpu:host:port`` -> ``wyoming``: the registered stage a configured name uses."""
    return normalize_name(stage_key(name).split("#", 1)[0])


def find_config_file(explicit: str | Path | None = None) -> Path | None:
    """--config, then $VOICED_CONFIG, then config/voiced.toml, then /etc/voiced/voiced.toml."""
    if explicit:
        return Path(explicit)
    if env := os.environ.get("VOICED_CONFIG"):
        return Path(env)
    return next((p for p in DEFAULT_CONFIG_PATHS if p.is_file()), None)


def read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a config file") from None
    except PermissionError:
        raise ConfigError(f"{path}: cannot read the config file (permission denied)") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from None


OTHER_VARIABLES = {"VOICED_CONFIG", "VOICED_CACHE_DIR", "VOICED_DISABLE_PLUGINS"}
"""``VOICED_*`` variables that are not settings (read elsewhere, by name)."""


def unknown_variables(environ: dict[str, str] | None = None) -> list[str]:
    """``VOICED_*`` names that set nothing: a typo such as ``VOICED_PIPELNE__ASR``."""
    environ = os.environ if environ is None else environ
    top = {name.upper() for name in Settings.model_fields if name != "config_file"}
    unknown = []
    for name in environ:
        upper = name.upper()
        if not upper.startswith("VOICED_") or upper in OTHER_VARIABLES:
            continue
        if upper.startswith("VOICED_TEST_"):  # the test suite's own knobs
            continue
        if upper[len("VOICED_") :].split("__", 1)[0] not in top:
            unknown.append(name)
    return sorted(unknown)


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """Load the config file (if any) and the environment; raise ConfigError naming the key.
    A ``VOICED_*`` variable that names no setting is logged as a warning."""
    for name in unknown_variables():
        log.warning("environment %s: names no setting (known: VOICED_<section>__<key>)", name)
    config_file = find_config_file(path)
    data = read_toml(config_file) if config_file else {}
    data = deep_merge(data, overrides)
    where = str(config_file) if config_file else "defaults"
    try:
        settings = Settings(**data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, where)) from None
    except SettingsError as exc:  # a VOICED_* value that should be JSON and isn't
        raise ConfigError(_env_error(exc)) from None
    settings.config_file = config_file.resolve() if config_file else None
    return settings


def _env_error(exc: Exception) -> str:
    """'environment VOICED_X: key: reason' for a variable pydantic-settings could not parse."""
    text = str(exc)
    field_name = text.split('field "', 1)[-1].split('"', 1)[0] if 'field "' in text else ""
    prefix = f"VOICED_{field_name.upper()}__" if field_name else "VOICED_"
    names = [
        n for n in os.environ if n.upper() == prefix.rstrip("_") or n.upper().startswith(prefix)
    ]
    for name in sorted(names):
        value = os.environ[name]
        if value.strip()[:1] in "[{":
            try:
                json.loads(value)
            except json.JSONDecodeError as bad:
                key = name[len("VOICED_") :].lower().replace("__", ".")
                return (
                    f"environment {name}: {key}: not valid JSON ({bad.msg} at column {bad.colno})"
                )
    return f"environment: {field_name or 'a VOICED_* variable'}: {text}"


def format_validation_error(exc: ValidationError, where: str, prefix: str = "") -> str:
    lines = []
    for err in exc.errors():
        key = ".".join(str(part) for part in (prefix, *err["loc"]) if part != "")
        got = err.get("input")
        shown = "" if isinstance(got, dict) or got is None else f" (got {got!r})"
        message = err["msg"]
        if err["type"] == "extra_forbidden":
            message = "unknown key"
        env_name = "VOICED_" + key.upper().replace(".", "__").replace("-", "_")
        source = f"environment {env_name}" if env_name in os.environ else where
        lines.append(f"{source}: {key}: {message}{shown}")
    return "\n".join(lines)


def deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def masked(data: Any) -> Any:
    """A copy of a config dict with secrets replaced by ``***``."""
    if isinstance(data, dict):
        return {
            k: ("***" if _is_secret(k) and v not in (None, "") else masked(v))
            for k, v in data.items()
        }
    if isinstance(data, list):
        return [masked(v) for v in data]
    if isinstance(data, str):
        return redact_urls(data)  # mqtt://user:password@host in a url key
    return data


def _is_secret(key: str) -> bool:
    key = key.lower()
    return any(word in key for word in SECRET_WORDS)
