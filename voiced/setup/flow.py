"""The order of setup's questions, from the language to the live check."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from voiced.plugins import PluginHost
from voiced.setup.answers import Answers
from voiced.setup.config_file import SYSTEM_CONFIG, TOKEN_VARIABLE, write_config
from voiced.setup.console import Console, SetupError
from voiced.setup.home_assistant import ask_home_assistant
from voiced.setup.language import ask_language
from voiced.setup.live_check import live_check
from voiced.setup.mqtt import ask_mqtt
from voiced.setup.offers import ask_offers
from voiced.setup.sound import ask_sound
from voiced.setup.wake import ask_wake_words


def asr_engines() -> list[str]:
    """The GPU engine first where its extra is installed, the CPU engine always."""
    gpu = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
    return ["whisper-transformers", "whisper-ctranslate2"] if gpu else ["whisper-ctranslate2"]


def ask_everything(console: Console, host: PluginHost, flags: Any, path: Path) -> Answers:
    answers = Answers(config_path=path, asr_engines=asr_engines())
    if path == SYSTEM_CONFIG:
        answers.token_env_file = path.parent / "voiced.env"
    ask_language(console, answers, flags.language)
    ask_sound(console, answers, flags)
    if answers.microphone:
        answers.wake_words = ask_wake_words(console, flags.wake_word)
    answers.home_assistant = ask_home_assistant(
        console, host, flags.ha_url, flags.ha_token_file, flags.home_assistant
    )
    broker = answers.home_assistant.broker if answers.home_assistant else None
    answers.mqtt = ask_mqtt(console, flags, broker)
    ask_offers(console, host, answers, flags)
    return answers


def keep_config(console: Console, answers: Answers, force: bool | None) -> bool:
    """Write the config; an existing one only when the user agrees (a backup is kept)."""
    console.heading("Config file")
    path = answers.config_path
    if path.exists() and not console.confirm(
        f"{path} exists: replace it (a backup is kept)?", "--force", force, False
    ):
        raise SetupError(f"{path} exists and was kept; pass --force to replace it "
                         "(a backup is kept) or --config for another file")  # fmt: skip
    try:
        done = write_config(answers)
    except OSError as exc:
        raise SetupError(f"cannot write {path}: {exc.strerror} (run with sudo, or pass "
                         "--config ~/.config/voiced/voiced.toml)") from None  # fmt: skip
    for line in done:
        console.ok(line)
    return True


def offer_service(console: Console, flags: Any, path: Path) -> None:
    from voiced.service_install import apply_plan, plan_install

    user = path.is_relative_to(Path.home())
    plan = plan_install(user=user)
    elsewhere = plan.config_path != path
    if not console.confirm("Install voiced as a service (voiced install-service)?",
                           "--install-service", flags.install_service, False):  # fmt: skip
        command = "voiced install-service" + (" --user" if user else "")
        console.say(f"  later: {command}" + (f"  (the service reads {plan.config_path})"
                                             if elsewhere else ""))  # fmt: skip
        return
    if elsewhere:
        console.warn(f"the service reads {plan.config_path}; copy {path} there")
    for written in apply_plan(plan):
        console.ok(f"wrote {written}")
    for command in plan.commands:
        console.say(f"  then: {command}")


def run_flow(console: Console, host: PluginHost, flags: Any, path: Path) -> int:
    answers = ask_everything(console, host, flags, path)
    keep_config(console, answers, flags.force)
    offer_service(console, flags, path)
    checked = answers.microphone and console.confirm(
        "Run a live check now?", "--live-check", flags.live_check, True
    )
    if checked and answers.home_assistant and answers.token_env_file:
        os.environ[TOKEN_VARIABLE] = answers.home_assistant.token  # as systemd will set it
    if checked and not live_check(path, console, answers.wake_words, flags.live_check_seconds):
        console.say(f"\nSome stages failed above; `voiced --config {path} doctor` says more.")
        return 1
    console.say(f"\nDone. Start voiced with:  {start_command(answers)}")
    return 0


def start_command(answers: Answers) -> str:
    path = answers.config_path
    if answers.token_env_file is not None:
        return (f"sudo systemctl enable --now voiced  (once `voiced install-service` wrote the "
                f"unit; by hand: sudo sh -c 'set -a; . {answers.token_env_file}; exec voiced "
                f"--config {path} run')")  # fmt: skip
    return f"voiced --config {path} run"
