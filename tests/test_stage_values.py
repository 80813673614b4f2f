"""A configured stage name may carry a value, as on the command line: ``asr =
["wyoming:gpu-box:10300", "whisper-ctranslate2"]`` in the file (or in ``VOICED_PIPELINE__ASR``)
sets the stage's shorthand option, exactly like ``--asr wyoming:gpu-box:10300``."""

from __future__ import annotations

import json

import pytest

from voiced.building import check_config, validate_options
from voiced.config import ConfigError, load_settings, stage_base_name, stage_key, stage_value
from voiced.plugins import load_plugins


@pytest.fixture(scope="module")
def host():
    return load_plugins()


def test_a_name_splits_into_its_key_its_stage_and_its_value():
    assert stage_key("wyoming#gpu:tcp://gpu-box:10300") == "wyoming#gpu"
    assert stage_base_name("wyoming#gpu:tcp://gpu-box:10300") == "wyoming"
    assert stage_value("wyoming#gpu:tcp://gpu-box:10300") == "tcp://gpu-box:10300"
    assert stage_value("whisper-ctranslate2") == ""
    assert stage_base_name("Whisper_CTranslate2") == "whisper-ctranslate2"


def test_a_value_in_the_file_sets_the_shorthand_option(write_config, host):
    path = write_config('[pipeline]\nasr = ["wyoming:gpu-box:10300", "whisper-ctranslate2"]\n')
    settings = load_settings(path)
    check_config(host, settings)
    options = validate_options(host, settings, "asr", settings.pipeline.asr[0], "pipeline.asr")
    assert options.uri == "gpu-box:10300"
    assert options.peer().address.port == 10300


def test_the_value_joins_the_options_block_of_the_stage(write_config, host):
    path = write_config(
        '[pipeline]\nasr = ["wyoming:gpu-box:10300", "wyoming#nas:tcp://nas:10301", '
        '"whisper-ctranslate2"]\n'
        "[stages.asr.wyoming]\ntimeout = 3.5\n"
        '[stages.asr."wyoming#nas"]\ntimeout = 9\n'
    )
    settings = load_settings(path)
    first, second, _ = settings.pipeline.asr
    gpu = validate_options(host, settings, "asr", first, "pipeline.asr")
    nas = validate_options(host, settings, "asr", second, "pipeline.asr")
    assert (gpu.uri, gpu.timeout) == ("gpu-box:10300", 3.5)
    assert (nas.uri, nas.timeout) == ("tcp://nas:10301", 9.0)


def test_a_value_overrides_the_uri_of_the_block(write_config, host):
    path = write_config(
        '[pipeline]\ntts = ["wyoming:tcp://speaker-box:10200", "piper"]\n'
        '[stages.tts.wyoming]\nuri = "tcp://elsewhere:1"\n'
    )
    settings = load_settings(path)
    assert validate_options(
        host, settings, "tts", settings.pipeline.tts[0], "pipeline.tts"
    ).uri == ("tcp://speaker-box:10200")


def test_the_environment_can_name_a_remote_with_its_value(write_config, host, monkeypatch):
    monkeypatch.setenv("VOICED_PIPELINE__WAKE", json.dumps(["wyoming:127.0.0.1:10400"]))
    settings = load_settings(write_config(""))
    check_config(host, settings)
    assert validate_options(
        host, settings, "wake", settings.pipeline.wake[0], "pipeline.wake"
    ).uri == ("127.0.0.1:10400")


def test_a_bad_value_is_one_line_naming_the_key_and_the_file(write_config, host):
    path = write_config('[pipeline]\nasr = ["wyoming:gpu-box", "whisper-ctranslate2"]\n')
    with pytest.raises(ConfigError) as info:
        check_config(host, load_settings(path))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: pipeline.asr: 'wyoming:gpu-box': ")
    assert "tcp://HOST:PORT" in message


def test_a_bad_value_from_the_environment_names_the_variable(write_config, host, monkeypatch):
    monkeypatch.setenv("VOICED_PIPELINE__TTS", '["wyoming:nowhere"]')
    with pytest.raises(ConfigError) as info:
        check_config(host, load_settings(write_config("")))
    assert str(info.value).startswith("environment VOICED_PIPELINE__TTS: pipeline.tts: ")


def test_a_value_for_a_stage_without_a_shorthand_is_refused(write_config, host):
    path = write_config('[pipeline]\nasr = ["whisper-ctranslate2:large", "whisper-ctranslate2"]\n')
    with pytest.raises(ConfigError, match=r"pipeline.asr: stage 'whisper-ctranslate2' takes no"):
        check_config(host, load_settings(path))


def test_an_unknown_stage_with_a_value_lists_the_available_ones(write_config, host):
    path = write_config('[pipeline]\nasr = ["wyomin:gpu-box:10300"]\n')
    with pytest.raises(
        ConfigError, match=r"pipeline.asr: no asr stage named .*available: .*wyoming"
    ):
        check_config(host, load_settings(path))
