"""The plugin system: built-ins first in a fixed order, entry points, a block list, checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from voiced.hookspecs import hookimpl
from voiced.plugins import BUILTIN_ORDER, PluginError, load_plugins

ROOT = Path(__file__).parents[1]
EXAMPLE = ROOT / "examples" / "voiced-energy-vad"


def test_builtins_load_first_in_the_fixed_order():
    host = load_plugins()
    builtins = [p.name for p in host.plugins if p.builtin]
    assert builtins == [name for name in BUILTIN_ORDER if name in builtins]
    first_third_party = next((i for i, p in enumerate(host.plugins) if not p.builtin), None)
    if first_third_party is not None:
        assert all(not p.builtin for p in host.plugins[first_third_party:])


def test_builtins_come_through_the_voiced_entry_point_group():
    host = load_plugins()
    info = next(p for p in host.plugins if p.name == "vad_webrtc")
    assert info.distribution == "voiced"
    assert info.module == "voiced_plugins.vad_webrtc"
    assert "vad:webrtc" in info.stages


def test_a_plugin_can_be_disabled_by_config():
    host = load_plugins(disabled=["vad_webrtc"])
    assert next(p for p in host.plugins if p.name == "vad_webrtc").status == "disabled"
    assert host.stage_spec("vad", "webrtc") is None


def test_a_plugin_can_be_disabled_by_environment(monkeypatch):
    monkeypatch.setenv("VOICED_DISABLE_PLUGINS", "log_events, vad-webrtc")
    host = load_plugins()
    status = {p.name: p.status for p in host.plugins}
    assert status["log_events"] == "disabled"
    assert status["vad_webrtc"] == "disabled"


def test_a_hookimpl_without_a_spec_fails_start_up_with_a_clear_message():
    class Misspelled:
        @hookimpl
        def voiced_recognise(self, transcript, context):  # British spelling: no such hook
            return None

    with pytest.raises(PluginError) as info:
        load_plugins(extra=[("misspelled", Misspelled())])
    assert "voiced_recognise" in str(info.value)
    assert "voiced_recognize" in str(info.value)  # lists the hooks that do exist


def test_an_unknown_stage_kind_is_refused():
    class Odd:
        @hookimpl
        def voiced_register_stages(self, register):
            register("microwave", "popcorn", object)

    with pytest.raises(PluginError, match="unknown stage kind 'microwave'"):
        load_plugins(extra=[("odd", Odd())])


def test_every_hookspec_has_a_test():
    from voiced import hookspecs

    hooks = [name for name in dir(hookspecs) if name.startswith("voiced_")]
    tests_text = "\n".join(p.read_text() for p in Path(__file__).parent.glob("test_*.py"))
    untested = [h for h in hooks if f"def test_hook_{h}" not in tests_text]
    assert not untested, f"hooks without a test_hook_<name> test: {untested}"


@pytest.fixture(scope="module")
def example_plugin_site(tmp_path_factory) -> Path:
    """The example third-party package, pip-installed into a folder of its own."""
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(EXAMPLE),
        ],
        check=True,
        capture_output=True,
    )
    return target


def _voiced(args: list[str], site: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(site), **env}
    return subprocess.run(
        [sys.executable, "-m", "voiced.cli", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )


def test_a_third_party_package_is_found_through_its_entry_point(example_plugin_site):
    result = _voiced(["plugins", "--json"], example_plugin_site)
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    energy = rows["energy_vad"]
    assert energy["status"] == "loaded"
    assert energy["from"].startswith("voiced-energy-vad 0.1.0")
    assert "(built-in)" not in energy["from"]
    assert energy["stages"] == ["vad:energy"]
    assert list(rows).index("energy_vad") > list(rows).index("vad_webrtc")


@pytest.mark.slow
def test_a_third_party_stage_replaces_a_builtin_one_in_a_real_run(example_plugin_site, tmp_path):
    config = tmp_path / "voiced.toml"
    config.write_text(
        '[pipeline]\nvad = "energy"\nasr = ["whisper-ctranslate2"]\nintent = []\n'
        'handler = []\ntts = ["piper"]\nsink = []\nservice = []\n'
        "[stages.vad.energy]\nthreshold_dbfs = -35\n"
    )
    result = _voiced(["--config", str(config), "run", "--events", "json"], example_plugin_site)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    transcripts = [e["data"]["text"].lower() for e in events if e["type"] == "transcript"]
    assert len(transcripts) == 2
    assert "kitchen" in transcripts[0]
    assert "time" in transcripts[1]
