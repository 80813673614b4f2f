"""Acceptance: ``voiced setup --non-interactive`` against a real Home Assistant core, a real
mosquitto and ALSA file devices; then the daemon, started with the config setup wrote, hears
"okay nabu, please turn on the kitchen lights" through the configured microphone and Home
Assistant's light goes on.

Home Assistant is ``ha_fixtures.HA_VERSION`` from PyPI, onboarded through its API, with the MQTT
integration and a light made through MQTT discovery (as in test_home_assistant_real.py); the
sound card is tests/sound_card.py. Each process (setup, voiced config, the daemon) is a real
child process that finds the card through its own $HOME.
"""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ha_fixtures import HomeAssistant
from mqtt_fixtures import Mosquitto, Recorder, free_port, make_certs
from sound_card import Screen, SoundCard
from speech import piper, silence, steady_piper
from test_home_assistant_real import (
    COMMAND,
    LIGHT,
    LIGHT_DISCOVERY,
    home_with_a_kitchen_light,
    set_light,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

VOICED = [sys.executable, "-m", "voiced.cli"]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mosquitto]:
    folder = tmp_path_factory.mktemp("mosquitto")
    mosquitto = Mosquitto(folder, make_certs(folder / "certs"))
    mosquitto.start()
    yield mosquitto
    mosquitto.stop(signal.SIGKILL)


@pytest.fixture(scope="module")
def ha(tmp_path_factory: pytest.TempPathFactory, broker: Mosquitto) -> Iterator[HomeAssistant]:
    with home_with_a_kitchen_light(tmp_path_factory.mktemp("homeassistant"), broker) as home:
        yield home


def test_setup_writes_a_config_with_which_a_spoken_command_switches_the_home_assistant_light(
    ha: HomeAssistant, broker: Mosquitto, card: SoundCard, tmp_path: Path
) -> None:
    token = tmp_path / "token-from-ha"
    token.write_text(ha.token + "\n")
    config = tmp_path / "etc" / "voiced" / "voiced.toml"  # the folder does not exist yet
    wyoming = free_port()
    question = silence(0.2) + piper("What time is it?")
    command = silence(0.5) + piper("okay nabu") + silence(0.4) + question + silence(1.5)
    setup = Screen(
        [*VOICED, "--config", str(config), "setup", "--non-interactive", "--language", "en",
         "--microphone", "voiced_mic", "--speaker", "voiced_speaker", "--wake-word", "okay_nabu",
         "--ha-url", ha.url, "--ha-token-file", str(token),
         "--mqtt-host", "127.0.0.1", "--mqtt-port", str(broker.port),
         "--wyoming", "--wyoming-uri", f"tcp://127.0.0.1:{wyoming}", "--no-install-service",
         "--live-check", "--live-check-seconds", "60"],
        card.env(), tmp_path,
    )  # fmt: skip
    try:
        setup.wait_for("Recording 3 s from voiced_mic", 120)
        card.say(question)
        setup.wait_for("Now say: 'okay nabu, what time is it'", 300)
        card.say(command)
        status = setup.wait(300)
    finally:
        setup.stop()
    screen = setup.text
    print(screen)  # what a person would have seen (pytest -rA shows it)
    assert status == 0, screen
    level = re.search(r"✓ level (-\d+) dBFS", screen)
    assert level and -50 < int(level.group(1)) < -3, screen
    heard = re.search(r"✓ voiced heard \((whisper-\w+)\): '(.*)'", screen)
    assert heard and "time" in heard.group(2).lower(), screen
    assert "✓ played a test sentence on the speaker" in screen
    areas = len(ha.ws("config/area_registry/list"))
    assert re.search(rf"I see {areas} areas? and [1-9]\d* exposed entit", screen), screen
    assert "Home Assistant uses the broker at 127.0.0.1" in screen
    assert f"✓ connected to the broker at 127.0.0.1:{broker.port}" in screen
    for verdict in ("✓ wake word: heard okay_nabu", "✓ intent: HassGetCurrentTime",
                    "✓ spoken answer: played"):  # fmt: skip
        assert verdict in screen, screen
    assert card.sound_seconds() > 1.0  # the test sentence and the answer reached the speaker
    assert ha.token not in config.read_text()

    checked = Screen([*VOICED, "--config", str(config), "config"], card.env(), tmp_path)
    assert checked.wait(120) == 0, checked.text
    assert 'device = "voiced_mic"' in checked.text

    set_light(ha, "off")
    light_commands = Recorder(broker.port, [LIGHT_DISCOVERY["command_topic"]])
    turn_on = silence(0.5) + piper("okay nabu") + silence(0.4) + steady_piper(COMMAND)
    daemon = Screen([*VOICED, "--config", str(config), "run", "--events", "json"],
                    card.env(), tmp_path)  # fmt: skip
    try:
        daemon.wait_for('"type": "ready"', 240)
        card.say(turn_on + silence(1.5))
        ha.wait(lambda: ha.state(LIGHT)["state"] == "on", 90, f"{LIGHT} on by voice")
        wake = daemon.wait_for('"type": "wake"', 5)
        assert "okay_nabu" in wake
    except BaseException:
        print(daemon.text[-6000:])
        raise
    finally:
        daemon.stop()
        light_commands.close()
    assert daemon.process.returncode == 0, daemon.text[-8000:]  # stopped cleanly on SIGTERM


@pytest.mark.parametrize(
    ("answers", "said"),
    [
        (
            ["--ha-token-file", "{wrong_token}"],
            "refused the token (401): make one in Home Assistant",
        ),
        (["--ha-url", "http://127.0.0.1:{closed}"], "is unreachable"),
        (["--microphone", "USB headset"], "no microphone matches 'USB headset'; found: "),
        (["--mqtt-port", "{closed}"], "no MQTT broker at 127.0.0.1:"),
    ],
    ids=["wrong token", "unreachable Home Assistant", "no such microphone", "no broker"],
)
def test_a_bad_answer_ends_non_interactive_setup_with_what_to_do_and_writes_nothing(
    ha: HomeAssistant, broker: Mosquitto, card: SoundCard, tmp_path: Path,
    answers: list[str], said: str,
) -> None:  # fmt: skip
    token, wrong = tmp_path / "token", tmp_path / "wrong-token"
    token.write_text(ha.token)
    wrong.write_text("not-a-token")
    flags = {"--microphone": "voiced_mic", "--ha-url": ha.url, "--ha-token-file": str(token),
             "--mqtt-port": str(broker.port)}  # fmt: skip
    fill = {"wrong_token": str(wrong), "closed": str(free_port())}
    flags.update(zip(answers[::2], [a.format(**fill) for a in answers[1::2]], strict=True))
    config = tmp_path / "voiced.toml"
    setup = Screen(
        [*VOICED, "--config", str(config), "setup", "--non-interactive", "--speaker", "none",
         "--record-seconds", "0", "--mqtt-host", "127.0.0.1",
         *[part for pair in flags.items() for part in pair]],
        card.env(), tmp_path,
    )  # fmt: skip
    assert setup.wait(120) == 2, setup.text
    assert said in setup.text
    assert not config.exists()
