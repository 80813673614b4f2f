"""A bad config file or variable is one line naming the file or variable, the key and the
reason, never a traceback; a reload that fails keeps the running config and tells systemd
it is ready again."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import EventRecorder

from voiced.config import ConfigError, load_settings
from voiced.daemon import Daemon
from voiced.plugins import load_plugins

VOICED = [sys.executable, "-m", "voiced.cli"]
ROOT = Path(__file__).parents[1]


def voiced(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*VOICED, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}, **(env or {})},
    )


def test_a_config_file_that_is_not_utf8_names_the_file(tmp_path):
    path = tmp_path / "voiced.toml"
    path.write_bytes(b'site_id = "k\xfcche"\n')
    with pytest.raises(ConfigError, match=f"{path}: not UTF-8 text"):
        load_settings(path)


def test_a_config_path_that_is_a_directory_says_so(tmp_path):
    with pytest.raises(ConfigError, match=f"{tmp_path}: is a directory"):
        load_settings(tmp_path)


def test_bad_json_in_an_environment_override_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("VOICED_PIPELINE__ASR", '["whisper')
    with pytest.raises(ConfigError) as caught:
        load_settings(Path(__file__).parent / "empty.toml")
    assert str(caught.value).startswith(
        "environment VOICED_PIPELINE__ASR: pipeline.asr: not valid JSON"
    ), caught.value


def test_an_unknown_log_level_is_a_warning_for_help_and_an_error_for_the_daemon(tmp_path):
    shown = voiced("--help", env={"VOICED_LOG_LEVEL": "LOUD"})
    assert shown.returncode == 0 and "usage: voiced" in shown.stdout
    assert "VOICED_LOG_LEVEL=LOUD is not a level" in shown.stderr
    assert "Traceback" not in shown.stderr
    config = voiced("--config", "tests/empty.toml", "config", env={"VOICED_LOG_LEVEL": "LOUD"})
    assert config.returncode == 2, config
    assert "environment VOICED_LOG_LEVEL: log_level:" in config.stderr
    assert "Traceback" not in config.stderr


def test_the_cli_reports_a_directory_and_a_non_utf8_file_without_a_traceback(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"\xff\xfe = 1\n")
    for path in (tmp_path, bad):
        done = voiced("--config", str(path), "config")
        assert done.returncode == 2 and str(path) in done.stderr, done
        assert "Traceback" not in done.stderr


def test_a_variable_that_names_no_setting_is_a_warning(monkeypatch, caplog):
    monkeypatch.setenv("VOICED_PIPELNE__ASR", '["whisper-ctranslate2"]')
    monkeypatch.setenv("VOICED_CACHE_DIR", "/tmp")  # read elsewhere: not a typo
    with caplog.at_level(logging.WARNING, logger="voiced.config"):
        load_settings(Path(__file__).parent / "empty.toml")
    # only the loader's own records: a client left by an earlier test may log meanwhile
    warned = [r.getMessage() for r in caplog.records if r.name == "voiced.config"]
    assert warned == [
        "environment VOICED_PIPELNE__ASR: names no setting (known: VOICED_<section>__<key>)"
    ], warned


def test_disabling_a_plugin_that_does_not_exist_is_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="voiced.plugins"):
        host = load_plugins(disabled=["wyomnig", "mqtt"])
    assert any(i.name == "mqtt" and i.status == "disabled" for i in host.plugins)
    # only the loader's own records: a client left by an earlier test may log meanwhile
    warned = [r.getMessage() for r in caplog.records if r.name == "voiced.plugins"]
    assert len(warned) == 1 and "'wyomnig', which is no installed plugin" in warned[0], warned


def test_with_no_config_file_at_all_a_command_is_recognized(tmp_path):
    done = subprocess.run(
        [*VOICED, "intent", "turn on the kitchen light"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,  # no config/voiced.toml, no home.yaml here
        env={k: v for k, v in os.environ.items() if not k.startswith("VOICED_")},
    )
    assert done.returncode == 0, done
    assert "HassTurnOn" in done.stdout
    assert "using the example home" in done.stderr


def test_say_with_empty_text_fails_and_writes_nothing(tmp_path):
    out = tmp_path / "x.wav"
    done = voiced("say", "", "--out", str(out))
    assert done.returncode == 1 and "nothing to say" in done.stderr, done
    assert not out.exists()


CONFIG = """
site_id = "kitchen"
[pipeline]
source = []
wake = []
asr = ["whisper-ctranslate2"]
intent = ["hassil"]
handler = ["builtin"]
tts = ["piper"]
sink = []
service = []
"""


async def until(check, timeout: float = 60.0):
    for _ in range(int(timeout / 0.05)):
        if result := check():
            return result
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.mark.slow
async def test_sighup_with_a_broken_file_keeps_running_and_is_ready_again(tmp_path, monkeypatch):
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(tmp_path / "notify"))
    notify.setblocking(False)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
    got: list[str] = []

    def messages() -> list[str]:
        while True:
            try:
                got.append(notify.recv(4096).decode())
            except BlockingIOError:
                return got

    config = tmp_path / "voiced.toml"
    config.write_text(CONFIG)
    recorder = EventRecorder()
    daemon = Daemon(config, extra_plugins=[("recorder", recorder)])
    running = asyncio.create_task(daemon.run())
    try:
        await until(lambda: any("READY=1" in m for m in messages()))
        assert {e.site_id for e in recorder.of("ready")} == {"kitchen"}
        breakages = [lambda: config.write_bytes(b'site_id = "k\xfcche"\n')]
        breakages.append(lambda: (config.unlink(), config.mkdir()))
        for number, breakage in enumerate(breakages, start=1):
            breakage()
            got.clear()
            os.kill(os.getpid(), signal.SIGHUP)
            await until(lambda n=number: len(recorder.of("reload")) == n)
            reloads = await until(lambda: len(messages()) >= 2 and got)
            assert reloads[0].startswith("RELOADING=1") and reloads[1].startswith("READY=1")
            reload = recorder.of("reload")[-1]
            assert reload.site_id == "kitchen" and reload.data["ok"] is False
            assert str(config) in reload.data["error"]
        assert not running.done()
        assert daemon.pipeline.settings.site_id == "kitchen"
    finally:
        daemon.request_stop()
        await asyncio.wait_for(running, 60)
        notify.close()
    assert {e.site_id for e in recorder.of("shutdown")} == {"kitchen"}
