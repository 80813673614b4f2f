"""The command line: help, the README's run on the bundled sample, clear start-up failures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def voiced(*args: str, cwd: Path = ROOT, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
    return subprocess.run(
        [sys.executable, "-m", "voiced.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
    )


def test_help_explains_every_command():
    result = voiced("--help")
    assert result.returncode == 0
    for command in (
        "run",
        "plugins",
        "config",
        "transcribe",
        "intent",
        "say",
        "doctor",
        "install-service",
        "models",
        "mqtt",
        "devices",
    ):
        assert command in result.stdout
    run_help = voiced("run", "--help").stdout
    assert "--source" in run_help and "--events" in run_help


@pytest.mark.slow
def test_the_readme_run_processes_the_bundled_sample_to_spoken_answers(tmp_path):
    config = tmp_path / "voiced.toml"
    config.write_text(
        (ROOT / "config" / "voiced.toml")
        .read_text()
        .replace('service = ["log", "mqtt"]', 'service = ["log"]')
    )
    (tmp_path / "home.yaml").write_text((ROOT / "config" / "home.yaml").read_text())
    result = voiced(
        "--config",
        str(config),
        "run",
        "--events",
        "json",
        "--sink",
        f"wav:{tmp_path / 'answers'}",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    intents = [e["data"]["name"] for e in events if e["type"] == "intent"]
    assert sorted(intents) == ["HassGetCurrentTime", "HassTurnOn"]
    assert len(list((tmp_path / "answers").glob("*.wav"))) == 2


@pytest.mark.slow
def test_a_tts_chain_that_cannot_load_stops_start_up_with_the_reason(tmp_path):
    config = tmp_path / "voiced.toml"
    config.write_text(
        "[pipeline]\nservice = []\nintent = []\nhandler = []\n"
        '[stages.tts.piper]\nvoice = "xx_XX-nobody-low"\n'
    )
    result = voiced("--config", str(config), "run")
    assert result.returncode == 1
    assert "cannot start: no tts engine could load" in result.stderr
    assert "xx_XX-nobody-low" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_an_optional_stage_that_fails_to_load_is_reported_and_the_daemon_runs_on(tmp_path):
    config = tmp_path / "voiced.toml"
    config.write_text(
        '[pipeline]\nservice = []\nintent = ["hassil"]\nhandler = ["builtin"]\n'
        '[stages.intent.hassil]\nhome = "/nonexistent/home.yaml"\n'
    )
    result = voiced("--config", str(config), "run", "--events", "json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    error = next(e for e in events if e["type"] == "error")
    assert error["data"]["stage"] == "intent"
    assert "hassil failed to load, running without it" in error["data"]["message"]
    assert len([e for e in events if e["type"] == "transcript"]) == 2


def test_realtime_without_a_source_applies_to_the_configured_sources_that_have_the_option(
    tmp_path,
):
    import argparse

    from voiced.cli import cli_overrides, plugin_host

    config = tmp_path / "voiced.toml"
    config.write_text('[pipeline]\nsource = ["file", "stdin"]\n')
    args = argparse.Namespace(config=str(config), realtime=True)
    expected = {"stages": {"source": {"file": {"realtime": True}}}}  # stdin has no such option
    assert cli_overrides(args, plugin_host()) == expected


def test_a_missing_input_file_is_reported_before_any_model_loads(tmp_path):
    for args in (("transcribe", "missing.wav"), ("run", "--source", "file:missing.wav")):
        result = voiced(*args, cwd=tmp_path, timeout=60)
        assert result.returncode != 0
        assert "missing.wav: no such file" in result.stderr
        assert "stage-loaded" not in result.stderr and "whisper" not in result.stderr


def test_intent_with_the_default_config_answers_without_a_spurious_service_error():
    result = voiced("--log-level", "INFO", "intent", "turn on the kitchen light", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "response: Turned on" in result.stdout
    assert "ERROR" not in result.stderr
    assert "voiced intent starts no services" in result.stderr


def test_intent_reads_many_sentences_from_stdin_with_one_grammar_load(tmp_path):
    lines = "turn on the kitchen light\n# a comment\n\nwhat time is it\nzork the blorb\n"
    result = subprocess.run(
        [sys.executable, "-m", "voiced.cli", "--log-level", "INFO", "intent", "--file", "-",
         "--json"],
        input=lines, capture_output=True, text=True, cwd=ROOT, timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("VOICED_")},
    )  # fmt: skip
    assert result.returncode == 1  # one sentence was not recognized
    decoder = json.JSONDecoder()
    results, text = [], result.stdout.strip()
    while text:
        value, end = decoder.raw_decode(text)
        results.append(value)
        text = text[end:].strip()
    assert [r["text"] for r in results] == [
        "turn on the kitchen light",
        "what time is it",
        "zork the blorb",
    ]
    assert [r["intent"]["name"] if r["intent"] else None for r in results] == [
        "HassTurnOn",
        "HassGetCurrentTime",
        None,
    ]
    assert result.stderr.count("hassil en:") == 1  # the grammar loaded once


def test_intent_json_prints_non_ascii_text_readably(tmp_path):
    sentence = "schalte das Küchenlicht ein"
    result = voiced("intent", sentence, "--json", timeout=120)
    assert sentence in result.stdout
    assert "\\u00fc" not in result.stdout
