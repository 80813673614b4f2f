"""``voiced setup``: its flags (one for every answer) and its exit statuses."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from voiced.config import EXIT_CONFIG
from voiced.setup.console import Console, SetupCancelled, SetupError

HELP = "a guided first run: microphone, speaker, Home Assistant, MQTT, wake word, config file"
DESCRIPTION = (
    "Asks what voiced needs, checks each answer against the real thing (the sound card, Home "
    "Assistant's API, the broker), writes one commented config file (an existing one only "
    "when you agree, with a backup), offers the service, and ends with a live check. In a "
    "terminal it asks; with --non-interactive every answer comes from a flag or its default."
)


def default_config_path() -> Path:
    """Where the service will read it: /etc/voiced for root, else the user unit's place."""
    if os.geteuid() == 0:
        return Path("/etc/voiced/voiced.toml")
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return config_home / "voiced" / "voiced.toml"


def configure_setup_parser(p: argparse.ArgumentParser) -> None:
    yes_no = argparse.BooleanOptionalAction
    p.add_argument(
        "--non-interactive",
        action="store_true",
        help="ask nothing: answers from the flags, else their defaults",
    )
    p.add_argument(
        "--force",
        action=yes_no,
        default=None,
        help="replace an existing config file (a backup is kept)",
    )
    p.add_argument("--language", help="the household's language (en, de, zh-CN, ...)")
    audio = p.add_argument_group("microphone and speaker")
    audio.add_argument("--microphone", metavar="NAME|INDEX|none")
    audio.add_argument("--speaker", metavar="NAME|INDEX|none")
    audio.add_argument(
        "--record-seconds",
        type=float,
        default=3.0,
        metavar="S",
        help="length of the test recording (0: none)",
    )
    audio.add_argument("--hear", action=yes_no, default=True, help="transcribe the test recording")
    audio.add_argument(
        "--play-test", action=yes_no, default=True, help="play a test sentence on the speaker"
    )
    audio.add_argument("--wake-word", metavar="WORD[,WORD]", help="e.g. okay_nabu,hey_jarvis")
    ha = p.add_argument_group("Home Assistant")
    ha.add_argument(
        "--home-assistant",
        action=yes_no,
        default=None,
        help="use Home Assistant as the home (default: when one is found)",
    )
    ha.add_argument("--ha-url", metavar="URL", help="e.g. http://homeassistant.local:8123")
    ha.add_argument(
        "--ha-token-file",
        metavar="FILE",
        help="a long-lived access token (else $HOME_ASSISTANT_TOKEN)",
    )
    mqtt = p.add_argument_group("MQTT broker")
    mqtt.add_argument("--mqtt-host", metavar="HOST", help="'embedded': voiced's own broker")
    mqtt.add_argument("--mqtt-port", type=int, metavar="PORT")
    mqtt.add_argument("--mqtt-username", metavar="NAME")
    mqtt.add_argument("--mqtt-password-file", metavar="FILE")
    mqtt.add_argument("--mqtt-tls", action=yes_no, default=None)
    mqtt.add_argument("--mqtt-ca-file", metavar="FILE", help="the CA of the broker's certificate")
    offers = p.add_argument_group("offers to Home Assistant")
    offers.add_argument("--wyoming", action=yes_no, default=None)
    offers.add_argument("--wyoming-uri", metavar="tcp://HOST:PORT")
    offers.add_argument("--esphome", action=yes_no, default=None)
    end = p.add_argument_group("the end")
    end.add_argument("--install-service", action=yes_no, default=None)
    end.add_argument(
        "--live-check",
        action=yes_no,
        default=None,
        help="run the config and follow one spoken command (default: yes)",
    )
    end.add_argument("--live-check-seconds", type=float, default=30.0, metavar="S")


def run_setup(args: argparse.Namespace) -> int:
    from voiced.setup.flow import run_flow

    interactive = not args.non_interactive and sys.stdin.isatty()
    console = Console(interactive)
    if not args.non_interactive and not interactive:
        console.say("(no terminal: answering from the flags and defaults, as --non-interactive)")
    path = Path(args.config).expanduser() if args.config else default_config_path()
    console.say(f"voiced setup: writes {path}")
    try:
        from voiced.cli import plugin_host

        return run_flow(console, plugin_host(), args, path)
    except SetupError as exc:
        print(f"voiced setup: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except (SetupCancelled, KeyboardInterrupt) as exc:
        print(f"\nvoiced setup: {exc or 'interrupted'}; nothing more is written", file=sys.stderr)
        return 130
