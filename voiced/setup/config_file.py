"""The config file setup writes: one commented TOML file, never over an existing one unasked.

A file that exists is replaced only after the user agreed (``--force`` without a terminal),
and a copy of it is kept beside it first (``voiced.toml.bak-YYYYmmdd-HHMMSS``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from voiced.setup.answers import Answers

Row = tuple[str, Any, str]  # key, value, comment
Table = tuple[str, str, list[Row]]  # name, comment above it, rows

TOKEN_FILE = "ha-token"
TOKEN_VARIABLE = "HOME_ASSISTANT_TOKEN"
SYSTEM_CONFIG = Path("/etc/voiced/voiced.toml")
"""The system service's config (`voiced install-service`): its token goes in voiced.env."""


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def token_path(answers: Answers) -> Path:
    return answers.config_path.parent / TOKEN_FILE


def services(answers: Answers) -> list[str]:
    found = ["log", "mqtt"]
    if answers.home_assistant:
        found.append("home-assistant")
    if answers.wyoming_uri:
        found.append("wyoming")
    if answers.esphome:
        found.append("esphome")
    return found


def pipeline_table(answers: Answers) -> Table:
    ha = answers.home_assistant is not None
    rows: list[Row] = [
        ("source", ["sounddevice"] if answers.microphone else [],
         "the microphone below" if answers.microphone else "no local microphone: satellites"),
        ("wake", ["openwakeword"] if answers.microphone else [],
         "a wake word starts each command ([stages.wake.openwakeword])"),
        ("asr", answers.asr_engines, "speech recognition, an ordered fallback chain"),
        ("intent", ["hassil"], "Home Assistant's sentences (an LLM can follow: docs/intents.md)"),
        ("handler", ["builtin", "home-assistant"] if ha else ["builtin", "responses"],
         "Home Assistant acts; timers and the time stay in voiced" if ha
         else "the time, timers, 'never mind'; Home Assistant's answers"),
        ("tts", ["piper"], "spoken answers"),
        ("sink", ["sounddevice"] if answers.speaker else [],
         "the speaker below" if answers.speaker else "no local speaker"),
        ("service", services(answers), "events to the log and MQTT, and the offers to HA"),
    ]  # fmt: skip
    return ("pipeline", "Stages by name, per kind (`voiced plugins` lists what is installed).",
            rows)  # fmt: skip


def audio_tables(answers: Answers) -> list[Table]:
    tables: list[Table] = []
    if answers.microphone:
        tables.append(
            (
                "stages.source.sounddevice",
                "",
                [("device", answers.microphone, "`voiced devices` lists them")],
            )
        )
        tables.append(("stages.wake.openwakeword", "",
                       [("models", answers.wake_words, "bundled: okay_nabu, hey_jarvis, alexa, "
                                                       "hey_mycroft, hey_rhasspy")]))  # fmt: skip
    if answers.speaker:
        tables.append(("stages.sink.sounddevice", "", [("device", answers.speaker, "")]))
    for engine in answers.asr_engines:
        tables.append((f"stages.asr.{engine}", "", [("model", answers.asr_model,
                       "bundled:base for every language but English")]))  # fmt: skip
    return tables


def home_tables(answers: Answers) -> list[Table]:
    ha = answers.home_assistant
    if ha is None:
        return [("stages.intent.hassil", "No Home Assistant: voiced knows the time and timers; "
                 "a home.yaml names your devices (docs/intents.md).",
                 [("home", "", ""), ("sentences", [], "")])]  # fmt: skip
    token: list[Row] = [("token_file", str(token_path(answers)), "mode 0600")]
    if answers.token_env_file is not None:  # the service's own user could not read a file
        token = []
    connection = [("url", ha.url, "https:// is verified"), *token]
    return [
        ("stages.intent.hassil", f"The home comes from Home Assistant {ha.version} "
         f"(setup saw {ha.areas} areas and {ha.entities} exposed entities).",
         [("home", "", "no YAML home: Home Assistant's"), ("sentences", [], "")]),
        ("stages.service.home-assistant", "", connection),
        ("stages.handler.home-assistant", "", connection),
    ]  # fmt: skip


def mqtt_table(answers: Answers) -> list[Table]:
    mqtt = answers.mqtt
    if mqtt.host is None:
        return [("stages.service.mqtt", "No broker named: voiced runs its own on 127.0.0.1:1883.",
                 [])]  # fmt: skip
    rows: list[Row] = [
        ("host", mqtt.host, "the broker Home Assistant uses"),
        ("port", mqtt.port, ""),
    ]
    if mqtt.username:
        rows.append(("username", mqtt.username, ""))
    if mqtt.password:
        rows.append(("password", mqtt.password, "this file is mode 0600 for it"))
    tables: list[Table] = [("stages.service.mqtt", "", rows)]
    if mqtt.tls:
        tls: list[Row] = [("enabled", True, "the certificate is verified")]
        if mqtt.ca_file:
            tls.append(("ca_file", mqtt.ca_file, ""))
        tables.append(("stages.service.mqtt.tls", "", tls))
    return tables


def offer_tables(answers: Answers) -> list[Table]:
    if not answers.wyoming_uri:
        return []
    return [("stages.service.wyoming", "Offered to Home Assistant: Settings > Devices & "
             "services > Add integration > Wyoming Protocol.",
             [("uri", answers.wyoming_uri, ""), ("wake", ["openwakeword"], "")])]  # fmt: skip


def render(answers: Answers) -> str:
    """The whole config file, commented."""
    lines = [
        f"# voiced configuration, written by `voiced setup` on {time.strftime('%Y-%m-%d %H:%M')}.",
        "# Check it: voiced --config THIS doctor.  Every key: config/voiced.toml in the source,",
        "# and docs/. Environment overrides: VOICED_<SECTION>__<KEY>.",
        "",
        f"site_id = {toml_value(answers.site_id)}",
        f"language = {toml_value(answers.language)}",
        'log_level = "INFO"',
    ]
    tables = [pipeline_table(answers), *audio_tables(answers), *home_tables(answers),
              *mqtt_table(answers), *offer_tables(answers)]  # fmt: skip
    for name, comment, rows in tables:
        lines.append("")
        if comment:
            lines.append(f"# {comment}")
        lines.append(f"[{name}]")
        for key, value, note in rows:
            line = f"{key} = {toml_value(value)}"
            lines.append(f"{line:<40} # {note}" if note else line)
    return "\n".join(lines) + "\n"


def has_secret(answers: Answers) -> bool:
    return bool(answers.mqtt.password)


def backup_name(path: Path) -> Path:
    return path.with_name(f"{path.name}.bak-{time.strftime('%Y%m%d-%H%M%S')}")


def write_private(path: Path, text: str, mode: int) -> None:
    """Write ``text`` to ``path`` with ``mode`` from the start (no moment world-readable)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_config(answers: Answers) -> list[str]:
    """Write the token file (if any) and the config; a backup of a replaced config first.
    Returns what was done, a line each."""
    done = []
    path = answers.config_path
    if path.exists():
        backup = backup_name(path)
        shutil.copy2(path, backup)
        done.append(f"kept the old config as {backup}")
    if answers.home_assistant is not None and answers.token_env_file is not None:
        write_env_token(answers.token_env_file, answers.home_assistant.token)
        done.append(f"wrote {TOKEN_VARIABLE} to {answers.token_env_file} (mode 0600; "
                    "systemd reads it for the service)")  # fmt: skip
    elif answers.home_assistant is not None:
        write_private(token_path(answers), answers.home_assistant.token + "\n", 0o600)
        done.append(f"wrote the Home Assistant token to {token_path(answers)} (mode 0600)")
    write_private(path, render(answers), 0o600 if has_secret(answers) else 0o644)
    done.append(f"wrote {path}")
    return done


def write_env_token(path: Path, token: str) -> None:
    """Set the token in a systemd EnvironmentFile, keeping every other line of it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        lines = []
    kept = [line for line in lines if not line.startswith(f"{TOKEN_VARIABLE}=")]
    write_private(path, "\n".join([*kept, f"{TOKEN_VARIABLE}={token}"]) + "\n", 0o600)


@contextmanager
def scratch_config(answers: Answers) -> Iterator[Path]:
    """The config as it would be written, in a temporary file (the token beside it): what the
    recording test, the test sentence and the live check run with before anything is kept."""
    with tempfile.TemporaryDirectory(prefix="voiced-setup-") as folder:
        scratch = dataclasses.replace(
            answers, config_path=Path(folder) / "voiced.toml", token_env_file=None
        )
        write_config(scratch)
        yield scratch.config_path
