"""Acceptance: the interactive ``voiced setup`` in a pseudo-terminal, as a person uses it:
answers typed (some wrong first: a language that is none, a wake word that is not bundled, a
wrong broker password), the screen read, and the config it ends with accepted by
``voiced config``. The sound card is ALSA file devices (tests/sound_card.py), the broker a
real mosquitto with a password listener."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect
import pytest
from mqtt_fixtures import Mosquitto
from sound_card import Screen, SoundCard
from speech import piper, silence

pytestmark = pytest.mark.slow  # loads Whisper and Piper in the setup process

VOICED = [sys.executable, "-m", "voiced.cli"]


class Terminal:
    """A pseudo-terminal running setup: ``answer`` waits for a question, then types."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child

    def expect(self, pattern: str, timeout: float = 60) -> str:
        try:
            self.child.expect(pattern, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF):
            raise AssertionError(f"{pattern!r} not on the screen:\n{self.screen()}") from None
        return str(self.child.before) + str(self.child.after)

    def answer(self, question: str, typed: str, timeout: float = 60) -> None:
        self.expect(re.escape(question), timeout)
        self.child.sendline(typed)

    def screen(self) -> str:
        return self.child.logfile_read.getvalue()[-6000:]


def test_the_guided_setup_in_a_terminal_asks_again_after_bad_answers_and_writes_a_config(
    card: SoundCard, mosquitto: Mosquitto, tmp_path: Path
) -> None:
    import io

    config = tmp_path / "voiced.toml"
    config.write_text("# the config I had\n")
    question = silence(0.2) + piper("What time is it?")
    log = io.StringIO()
    child = pexpect.spawn(
        VOICED[0], [*VOICED[1:], "--config", str(config), "setup"], env=card.env(),
        cwd=str(tmp_path), encoding="utf-8", codec_errors="replace", dimensions=(40, 120),
    )  # fmt: skip
    child.logfile_read = log
    term = Terminal(child)
    try:
        term.answer("Language of the household", "klingon")
        term.expect("'klingon' is not a language tag")
        term.answer("Language of the household", "en")
        term.answer("Microphone (number or name", "voiced_mic")
        term.answer("Speaker (number or name", "voiced_speaker")
        term.expect("Recording 3 s from voiced_mic")
        card.say(question)
        heard = term.expect(r"voiced heard \(whisper-[a-z0-9]+\): [^\r\n]*", 180)
        assert "time" in heard.lower(), term.screen()
        term.expect("played a test sentence on the speaker", 180)
        term.answer("Wake word(s), comma-separated", "hey siri")
        term.expect("wake word hey_siri: not bundled")
        term.answer("Wake word(s), comma-separated", "Okay Nabu, hey jarvis")
        term.expect("say 'okay nabu' or 'hey jarvis' before a command")
        term.answer("Use Home Assistant as the home?", "n")
        for password in ("wrong", mosquitto.password):
            term.answer("Broker host", "127.0.0.1")
            term.answer("TLS?", "n")
            term.answer("Broker port", str(mosquitto.auth_port))
            term.answer("Username", mosquitto.username)
            term.answer("Password", password)
            if password == "wrong":
                term.expect("refused the login")
        term.expect(f"connected to the broker at 127.0.0.1:{mosquitto.auth_port} as")
        term.answer("Offer voiced's speech-to-text", "n")
        term.answer("Offer voiced as an ESPHome voice satellite?", "n")
        term.answer("exists: replace it (a backup is kept)?", "y")
        term.expect(f"wrote {config}")
        term.answer("Install voiced as a service", "n")
        term.answer("Run a live check now?", "n")
        term.expect("Done. Start voiced with")
        child.expect(pexpect.EOF, timeout=30)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0, term.screen()
    assert "wrong" not in log.getvalue()  # the password is not echoed
    assert [b.read_text() for b in tmp_path.glob("voiced.toml.bak-*")] == ["# the config I had\n"]

    checked = Screen([*VOICED, "--config", str(config), "config"], card.env(), tmp_path)
    assert checked.wait(120) == 0, checked.text
    assert 'models = ["okay_nabu", "hey_jarvis"]' in checked.text
    assert f"port = {mosquitto.auth_port}" in checked.text
    assert 'password = "***"' in checked.text  # set, and masked
    assert mosquitto.password in config.read_text()
    assert config.stat().st_mode & 0o077 == 0  # which makes the file private
