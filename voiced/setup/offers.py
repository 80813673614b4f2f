"""What voiced offers Home Assistant: its speech services over Wyoming, and (when the plugin
is installed) itself as an ESPHome voice satellite."""

from __future__ import annotations

from typing import Any

from voiced.plugins import PluginHost
from voiced.setup.answers import Answers
from voiced.setup.console import Console, SetupError


def check_uri(uri: str) -> str:
    host, _, port = uri.removeprefix("tcp://").rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise SetupError(f"Wyoming address {uri!r}: use tcp://HOST:PORT, e.g. tcp://0.0.0.0:10700")
    return f"tcp://{host}:{port}"


def ask_offers(console: Console, host: PluginHost, answers: Answers, flags: Any) -> None:
    console.heading("Offers to Home Assistant")
    local = answers.home_assistant is not None and answers.home_assistant.url.startswith(
        ("http://127.0.0.1", "http://localhost")
    )
    default_uri = "tcp://127.0.0.1:10700" if local else "tcp://0.0.0.0:10700"
    if host.stage_spec("service", "wyoming") is not None:
        offer = console.confirm(
            "Offer voiced's speech-to-text, text-to-speech and wake word to Home Assistant "
            "(Wyoming)?", "--wyoming/--no-wyoming", flags.wyoming, False,
        )  # fmt: skip
        if offer:

            def attempt(first: bool) -> str:
                return check_uri(
                    console.ask(
                        "Listen on",
                        "--wyoming-uri",
                        flags.wyoming_uri if first else None,
                        default_uri,
                    )
                )

            answers.wyoming_uri = console.until_valid(attempt)
            console.ok(f"in Home Assistant add the Wyoming Protocol integration: this host, port "
                       f"{answers.wyoming_uri.rsplit(':', 1)[1]}")  # fmt: skip
    if host.stage_spec("service", "esphome") is not None:
        answers.esphome = console.confirm(
            "Offer voiced as an ESPHome voice satellite?", "--esphome/--no-esphome",
            flags.esphome, False,
        )  # fmt: skip
