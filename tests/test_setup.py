"""``voiced setup``'s answers checked against the real thing: a real mosquitto (anonymous,
password and TLS listeners), closed ports and a web server that is not Home Assistant, the
config it writes loaded by voiced itself. The whole guided run (sound card, Home Assistant,
the daemon) is in test_setup_acceptance.py and test_setup_terminal.py."""

from __future__ import annotations

import io
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_files import serving
from mqtt_fixtures import Mosquitto, free_port

from voiced.setup.answers import Answers, HomeAssistantAnswer, MqttAnswer
from voiced.setup.config_file import render, write_config
from voiced.setup.console import Console, SetupError
from voiced.setup.devices import Device, level_verdict, pick
from voiced.setup.flow import keep_config
from voiced.setup.home_assistant import check_token, looks_like_home_assistant
from voiced.setup.language import check_language, missing_for
from voiced.setup.mqtt import probe_broker
from voiced.setup.offers import check_uri
from voiced.setup.wake import bundled_wake_words, check_wake_words

# -- the broker -------------------------------------------------------------------------------


def test_the_broker_probe_connects_anonymously_with_a_login_and_over_tls(mosquitto: Mosquitto):
    probe_broker(MqttAnswer("127.0.0.1", mosquitto.port))
    probe_broker(MqttAnswer("127.0.0.1", mosquitto.auth_port, mosquitto.username,
                            mosquitto.password))  # fmt: skip
    probe_broker(MqttAnswer("127.0.0.1", mosquitto.tls_port, tls=True,
                            ca_file=str(mosquitto.certs.ca)))  # fmt: skip


def test_a_wrong_password_is_named_as_a_refused_login(mosquitto: Mosquitto):
    with pytest.raises(SetupError, match=r"refused the login .*--mqtt-password"):
        probe_broker(MqttAnswer("127.0.0.1", mosquitto.auth_port, mosquitto.username, "wrong"))


def test_no_broker_and_an_unknown_certificate_say_so(mosquitto: Mosquitto):
    with pytest.raises(SetupError, match=r"no MQTT broker at 127\.0\.0\.1:\d+"):
        probe_broker(MqttAnswer("127.0.0.1", free_port()))
    with pytest.raises(SetupError, match=r"TLS to the broker .* failed .*--mqtt-ca-file"):
        probe_broker(MqttAnswer("127.0.0.1", mosquitto.tls_port, tls=True))


# -- Home Assistant's address -----------------------------------------------------------------


@pytest.fixture
def not_home_assistant() -> Iterator[str]:
    """A web server on 127.0.0.1 that is something else (a router's page, say)."""
    with serving({"/": b"<html>router</html>"}) as url:
        yield url


def test_an_unreachable_home_assistant_and_a_wrong_address_are_told_apart(not_home_assistant):
    closed = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(SetupError, match=r"unreachable .*is it running"):
        check_token(closed, "token")
    with pytest.raises(SetupError, match="not as Home Assistant's API does"):
        check_token(not_home_assistant, "token")
    with pytest.raises(SetupError, match="is not a URL"):
        check_token("homeassistant.local", "token")
    assert not looks_like_home_assistant(closed)
    assert not looks_like_home_assistant(not_home_assistant)


# -- language, wake words, devices, Wyoming ---------------------------------------------------


def test_the_language_is_checked_against_home_assistants_sentences():
    assert check_language("DE") == "de"
    assert check_language("zh-cn") == "zh-CN"
    with pytest.raises(SetupError, match=r"no sentences for it; one of: .*de"):
        check_language("xx")
    with pytest.raises(SetupError, match="not a language tag"):
        check_language("klingon")
    assert missing_for("en") == []


def test_wake_words_are_the_bundled_ones_written_as_people_say_them():
    known = bundled_wake_words()
    assert {"okay_nabu", "hey_jarvis"} <= set(known)
    assert check_wake_words("Okay Nabu, hey-jarvis, okay_nabu", known) == ["okay_nabu",
                                                                          "hey_jarvis"]  # fmt: skip
    with pytest.raises(SetupError, match="not bundled; pick from okay_nabu"):
        check_wake_words("hey siri", known)


def test_a_microphone_is_picked_by_index_or_name_and_none_found_is_a_clear_error():
    found = [Device(0, "HDA Intel PCH: ALC887 Analog", 2, 2, 48000),
             Device(3, "USB Audio Device", 1, 0, 44100, default_input=True),
             Device(5, "HDMI 0", 0, 8, 48000)]  # fmt: skip
    assert pick(found, "3", "input").name == "USB Audio Device"
    assert pick(found, "usb", "input").index == 3
    with pytest.raises(SetupError, match=r"no microphone matches 'HDMI'; found: .*USB Audio"):
        pick(found, "HDMI", "input")
    with pytest.raises(SetupError, match="no microphone found"):
        pick([found[2]], "0", "input")


def test_a_recording_level_that_cannot_carry_speech_is_named():
    assert "muted" in (level_verdict(float("-inf")) or "")
    assert "quiet" in (level_verdict(-70.0) or "")
    assert "clipping" in (level_verdict(-1.0) or "")
    assert level_verdict(-25.0) is None


def test_the_wyoming_address_must_be_host_and_port():
    assert check_uri("0.0.0.0:10700") == "tcp://0.0.0.0:10700"
    with pytest.raises(SetupError, match="use tcp://HOST:PORT"):
        check_uri("tcp://0.0.0.0")


# -- asking -----------------------------------------------------------------------------------


def test_without_a_terminal_a_missing_answer_names_the_flag_to_pass():
    console = Console(interactive=False, out=io.StringIO())
    assert console.ask("Broker port", "--mqtt-port", None, "1883") == "1883"
    with pytest.raises(SetupError, match="Password: no answer; pass --mqtt-password-file"):
        console.ask("Password", "--mqtt-password-file", None, None, secret=True)


def test_in_a_terminal_a_bad_answer_is_said_and_asked_again():
    typed = iter(["hey siri", "alexa"])
    out = io.StringIO()
    console = Console(interactive=True, out=out, read=lambda prompt: next(typed))
    known = bundled_wake_words()
    words = console.until_valid(
        lambda first: check_wake_words(console.ask("Wake word", "--wake-word"), known)
    )
    assert words == ["alexa"]
    assert "✗ wake word hey_siri: not bundled" in out.getvalue()


# -- the config file --------------------------------------------------------------------------


def full_answers(path: Path, ca: Path) -> Answers:
    ca.write_text("not read until TLS is used\n")
    return Answers(
        config_path=path, language="de", asr_model="bundled:base",
        microphone="USB Audio Device", speaker="USB Audio Device", wake_words=["hey_jarvis"],
        home_assistant=HomeAssistantAnswer("http://127.0.0.1:8123", "secret-token", "2026.11.0",
                                           12, 87),
        mqtt=MqttAnswer("127.0.0.1", 8883, "voiced", "pass word", tls=True,
                        ca_file=str(ca)),
        wyoming_uri="tcp://0.0.0.0:10700",
    )  # fmt: skip


def test_the_written_config_is_one_that_voiced_loads_with_every_answer_in_it(tmp_path: Path):
    from voiced.building import configured_stages, validate_options
    from voiced.daemon import prepare

    path = tmp_path / "etc" / "voiced" / "voiced.toml"  # a fresh machine: no folder yet
    answers = full_answers(path, tmp_path / "ca.pem")
    write_config(answers)
    settings, host = prepare(path)
    assert settings.language == "de"
    assert settings.pipeline.source == ["sounddevice"]
    assert settings.pipeline.handler == ["builtin", "home-assistant"]
    assert set(settings.pipeline.service) == {"log", "mqtt", "home-assistant", "wyoming"}
    options = {(kind, name): validate_options(host, settings, kind, name, f"pipeline.{kind}")
               for kind, name, _ in configured_stages(settings)}  # fmt: skip
    assert options[("wake", "openwakeword")].models == ["hey_jarvis"]
    assert options[("service", "mqtt")].password.get_secret_value() == "pass word"
    assert options[("service", "mqtt")].tls.enabled
    token = Path(options[("service", "home-assistant")].token_file)
    assert token.read_text().strip() == "secret-token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # it holds the MQTT password
    text = path.read_text()
    assert "secret-token" not in text
    assert "12 areas and 87 exposed entities" in text
    assert text.count("\n#") >= 3  # commented


def test_an_existing_config_is_kept_unless_replacing_was_asked_for_and_then_backed_up(
    tmp_path: Path,
):
    path = tmp_path / "voiced.toml"
    path.write_text("# mine\n")
    answers = Answers(config_path=path)
    quiet = Console(interactive=False, out=io.StringIO())
    with pytest.raises(SetupError, match="exists and was kept; pass --force"):
        keep_config(quiet, answers, None)
    assert path.read_text() == "# mine\n"
    keep_config(quiet, answers, True)
    backups = list(tmp_path.glob("voiced.toml.bak-*"))
    assert [b.read_text() for b in backups] == ["# mine\n"]
    assert "written by `voiced setup`" in path.read_text()


def test_without_home_assistant_the_config_names_no_home_and_uses_the_embedded_broker(
    tmp_path: Path,
):
    from voiced.daemon import prepare

    path = tmp_path / "voiced.toml"
    text = render(Answers(config_path=path, microphone=None))
    assert "voiced runs its own on 127.0.0.1:1883" in text
    path.write_text(text)
    settings, _ = prepare(path)
    assert settings.pipeline.source == [] and settings.pipeline.handler == ["builtin", "responses"]
    assert settings.stage_options("intent", "hassil")["home"] == ""


def test_for_the_system_service_the_token_goes_in_its_environment_file_not_a_token_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The system unit runs as a dynamic user that cannot read a root-owned 0600 token file;
    systemd reads voiced.env (as root) and hands the token over in the environment."""
    from voiced.daemon import prepare

    env = tmp_path / "voiced.env"
    env.write_text("VOICED_STAGES__SERVICE__MQTT__PASSWORD=kept\nHOME_ASSISTANT_TOKEN=old\n")
    answers = full_answers(tmp_path / "voiced.toml", tmp_path / "ca.pem")
    answers.token_env_file = env
    write_config(answers)
    assert env.read_text().splitlines() == ["VOICED_STAGES__SERVICE__MQTT__PASSWORD=kept",
                                            "HOME_ASSISTANT_TOKEN=secret-token"]  # fmt: skip
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assert "token_file" not in (tmp_path / "voiced.toml").read_text()
    assert not (tmp_path / "ha-token").exists()
    monkeypatch.setenv("HOME_ASSISTANT_TOKEN", "secret-token")
    settings, _ = prepare(tmp_path / "voiced.toml")
    assert "home-assistant" in settings.pipeline.service
