"""The ``recognition`` profile of an ASR stage: one key for most, a table for experts, and the
old flat keys still starting with a warning that names the new one."""

from __future__ import annotations

import logging

import pytest
from pydantic import ValidationError
from voiced_plugins.asr_whisper.ct2 import WhisperCt2Options
from voiced_plugins.asr_whisper.listen import options as recognition_options

from voiced.building import validate_options
from voiced.config import ConfigError, load_settings
from voiced.plugins import load_plugins


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch):
    """Each test sees the once-a-process deprecation warnings afresh."""
    monkeypatch.setattr(recognition_options, "_warned", set())


def ct2_options(write_config, text: str) -> WhisperCt2Options:
    settings = load_settings(write_config("[stages.asr.whisper-ctranslate2]\n" + text))
    return validate_options(load_plugins(), settings, "asr", "whisper-ctranslate2", "pipeline.asr")


def test_the_default_profile_is_home_with_every_home_step_on():
    profile = WhisperCt2Options().recognition
    assert profile.profile == "home" and profile.home
    assert profile.rescore and profile.constrained and profile.retry and profile.searches
    assert profile.hypotheses == 3


def test_the_profile_alone_is_one_key(write_config):
    profile = ct2_options(write_config, 'recognition = "free"\n').recognition
    assert profile.profile == "free"
    assert not profile.home and not profile.searches  # no grammar is built for it


def test_the_expert_switches_are_a_table_under_the_profile(write_config):
    options = ct2_options(
        write_config,
        'model = "bundled:tiny.en"\n\n[stages.asr.whisper-ctranslate2.recognition]\n'
        'profile = "home"\nretry = false\nsearch_beam = 12\nbudget_s = 0.75\n',
    )
    profile = options.recognition
    assert (profile.retry, profile.search_beam, profile.budget_s) == (False, 12, 0.75)
    assert profile.rescore  # the rest as the profile has it


def test_an_old_flat_key_still_works_and_the_warning_names_its_new_key(write_config, caplog):
    with caplog.at_level(logging.WARNING):
        options = ct2_options(write_config, "home_retry = false\nrecognition_budget_s = 1.5\n")
    assert options.recognition.retry is False
    assert options.recognition.budget_s == 1.5
    said = caplog.text
    assert "home_retry is deprecated: set retry under " in said
    assert "[stages.asr.whisper-ctranslate2.recognition]" in said
    assert "recognition_budget_s is deprecated: set budget_s under" in said


def test_the_deprecation_is_said_once_a_process(caplog):
    with caplog.at_level(logging.WARNING):
        WhisperCt2Options(home_rescore=False)
        WhisperCt2Options(home_rescore=False)
    assert caplog.text.count("home_rescore is deprecated") == 1


def test_an_old_flat_key_beside_its_new_key_must_agree(write_config):
    with pytest.raises(ConfigError, match="home_retry"):
        ct2_options(
            write_config,
            "home_retry = false\n\n[stages.asr.whisper-ctranslate2.recognition]\nretry = true\n",
        )
    agreeing = ct2_options(
        write_config,
        "home_retry = false\n\n[stages.asr.whisper-ctranslate2.recognition]\nretry = false\n",
    )
    assert agreeing.recognition.retry is False


def test_an_unknown_profile_or_switch_is_a_clear_error(write_config):
    with pytest.raises(ConfigError, match=r"recognition\.profile"):
        ct2_options(write_config, 'recognition = "dictation"\n')
    with pytest.raises(ConfigError, match=r"recognition\.rescor"):
        ct2_options(write_config, "[stages.asr.whisper-ctranslate2.recognition]\nrescor = true\n")
    with pytest.raises(ValidationError):
        WhisperCt2Options(recognition={"budget_s": 0})
