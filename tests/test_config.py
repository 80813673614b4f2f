"""Configuration: a TOML file plus VOICED_* environment; errors name the file, key and reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from voiced.building import check_config, validate_options
from voiced.config import ConfigError, load_settings, masked
from voiced.plugins import load_plugins


def test_defaults_need_no_file(write_config):
    settings = load_settings(write_config(""))
    assert settings.pipeline.vad == "webrtc"
    assert settings.vad.silence_seconds == 0.7
    assert settings.vad.speech_seconds == 0.3
    assert settings.vad.max_command_seconds == 15.0


def test_the_documented_default_config_is_valid():
    from pathlib import Path

    default = Path(__file__).parents[1] / "config" / "voiced.toml"
    settings = load_settings(default)
    check_config(load_plugins(), settings)


def test_a_bad_value_names_the_file_the_key_and_the_reason(write_config):
    path = write_config("[pipeline]\nasr_queue_size = 0\n")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = str(info.value)
    assert str(path) in message
    assert "pipeline.asr_queue_size" in message
    assert "greater than or equal to 1" in message


def test_an_unknown_key_is_named(write_config):
    with pytest.raises(ConfigError, match=r"vad\.silence_secs: unknown key"):
        load_settings(write_config("[vad]\nsilence_secs = 1\n"))


def test_invalid_toml_says_where(write_config):
    with pytest.raises(ConfigError, match=r"not valid TOML.*line 2"):
        load_settings(write_config("[pipeline]\nasr = ]\n"))


def test_a_missing_explicit_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_settings(tmp_path / "nope.toml")


def test_environment_overrides_the_file_with_nested_keys(write_config, monkeypatch):
    path = write_config('[pipeline]\nasr = ["whisper-ctranslate2"]\n[vad]\nsilence_seconds = 0.5\n')
    monkeypatch.setenv("VOICED_VAD__SILENCE_SECONDS", "1.25")
    monkeypatch.setenv("VOICED_PIPELINE__TTS", '["piper"]')
    settings = load_settings(path)
    assert settings.vad.silence_seconds == 1.25
    assert settings.pipeline.tts == ["piper"]
    assert settings.pipeline.asr == ["whisper-ctranslate2"]


def test_a_bad_environment_value_names_the_variable(write_config, monkeypatch):
    monkeypatch.setenv("VOICED_CONVERSATION__BARGE_IN", "sometimes")
    with pytest.raises(ConfigError, match="VOICED_CONVERSATION__BARGE_IN"):
        load_settings(write_config(""))


def test_config_file_comes_from_VOICED_CONFIG(write_config, monkeypatch):
    path = write_config('site_id = "kitchen"\n')
    monkeypatch.setenv("VOICED_CONFIG", str(path))
    assert load_settings().site_id == "kitchen"


def test_stage_options_are_validated_by_the_plugins_own_model(write_config):
    path = write_config("[stages.vad.webrtc]\naggressiveness = 7\n")
    with pytest.raises(ConfigError) as info:
        check_config(load_plugins(), load_settings(path))
    assert "stages.vad.webrtc.aggressiveness" in str(info.value)
    assert str(path) in str(info.value)


def test_stage_options_can_come_from_the_environment(write_config, monkeypatch):
    monkeypatch.setenv("VOICED_STAGES__VAD__WEBRTC__AGGRESSIVENESS", "1")
    settings = load_settings(write_config(""))
    assert settings.stage_options("vad", "webrtc") == {"aggressiveness": "1"}


def test_a_list_option_of_a_stage_can_come_from_the_environment(write_config, monkeypatch):
    monkeypatch.setenv("VOICED_STAGES__INTENT__HASSIL__SENTENCES", "[]")
    monkeypatch.setenv("VOICED_STAGES__SOURCE__FILE__PATH", "[draft].wav")  # not JSON: a string
    settings = load_settings(write_config('[stages.intent.hassil]\nsentences = ["a.yaml"]\n'))
    host = load_plugins()
    check_config(host, settings)
    assert validate_options(host, settings, "intent", "hassil", "pipeline.intent").sentences == []
    assert settings.stage_options("source", "file") == {"path": "[draft].wav"}


def test_an_unknown_stage_lists_the_available_ones(write_config):
    path = write_config('[pipeline]\nvad = "silero-x"\n')
    with pytest.raises(ConfigError) as info:
        check_config(load_plugins(), load_settings(path))
    assert "pipeline.vad" in str(info.value)
    assert "webrtc" in str(info.value)


def test_secrets_are_masked():
    data = {
        "stages": {
            "service": {"mqtt": {"password": "hunter2", "username": "me"}},
            "intent": {"llm": {"api_key": "sk-123", "url": "http://x"}},
        }
    }
    shown = masked(data)
    assert shown["stages"]["service"]["mqtt"] == {"password": "***", "username": "me"}
    assert shown["stages"]["intent"]["llm"]["api_key"] == "***"


def test_voiced_config_prints_the_effective_config_with_secrets_masked(write_config):
    path = write_config("[pipeline]\nservice = []\n[stages.vad.webrtc]\naggressiveness = 3\n")
    out = subprocess.run(
        [sys.executable, "-m", "voiced.cli", "--config", str(path), "config", "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    data = json.loads(out)
    assert data["config_file"] == str(path.resolve())
    assert data["stages"]["vad"]["webrtc"] == {"aggressiveness": 3, "frame_ms": 30}


def test_voiced_exits_2_and_names_the_key_on_a_bad_config(write_config):
    path = write_config("[conversation]\nfollow_up_seconds = -1\n")
    result = subprocess.run(
        [sys.executable, "-m", "voiced.cli", "--config", str(path), "config"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "conversation.follow_up_seconds" in result.stderr


def test_the_rest_of_a_failed_engine_is_a_setting_the_chains_take():
    from voiced.pipeline import Pipeline

    settings = load_settings(None, pipeline={"engine_retry_seconds": 2.5})
    pipeline = Pipeline(settings, load_plugins())
    pipeline.build(only={"asr", "tts"})
    assert pipeline.asr.retry_after == pipeline.tts.retry_after == 2.5
