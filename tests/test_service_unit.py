"""The systemd units and ``voiced install-service``."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from voiced import service_install
from voiced.cli import EXIT_CONFIG
from voiced.service_install import (
    REPO_UNIT_EXEC,
    apply_plan,
    plan_install,
    readable_by_others,
    render_unit,
    run_install_service,
    voiced_command,
)

REPO = Path(__file__).resolve().parent.parent
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="systemd-analyze not installed (apt-get install systemd)"
)


def directives(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) for every active line; keys may repeat (DeviceAllow)."""
    out, section = [], ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out.append((section, key, value))
    return out


def values(text: str, key: str) -> list[str]:
    return [v for _, k, v in directives(text) if k == key]


def verify(unit: Path, user: bool = False, tmp: Path | None = None) -> list[str]:
    """Run ``systemd-analyze verify``; return its complaints about this unit (none = clean)."""
    env = dict(os.environ)
    args = [SYSTEMD_ANALYZE, "verify", "--man=no", str(unit)]
    if user:
        runtime = (tmp or unit.parent) / "xdg-runtime"
        runtime.mkdir(mode=0o700, exist_ok=True)
        env["XDG_RUNTIME_DIR"] = str(runtime)
        args.insert(1, "--user")
    result = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    lines = (result.stdout + result.stderr).splitlines()
    complaints = [line for line in lines if unit.name in line]
    if result.returncode != 0:
        complaints.append(f"exit status {result.returncode}: {lines[-3:]}")
    return complaints


def test_committed_units_are_the_installer_templates():
    assert (REPO / "systemd/voiced.service").read_text() == render_unit(REPO_UNIT_EXEC)
    assert (REPO / "systemd/voiced-user.service").read_text() == render_unit(
        REPO_UNIT_EXEC, user=True
    )


def test_system_unit_reports_readiness_watchdog_and_reloads_with_sighup():
    text = render_unit("/opt/voiced/bin/voiced")
    assert values(text, "Type") == ["notify"]
    assert values(text, "NotifyAccess") == ["main"]
    assert values(text, "ExecStart") == ["/opt/voiced/bin/voiced run"]
    assert values(text, "ExecReload") == ["/bin/sh -c 'kill -HUP ${MAINPID}'"]
    assert values(text, "WatchdogSec") == ["30"]
    assert int(values(text, "TimeoutStartSec")[0]) >= 300  # model load + warm-up
    assert values(text, "Restart") == ["on-failure"]
    # a config error (exit 2) is not retried in a loop
    assert values(text, "RestartPreventExitStatus") == [str(EXIT_CONFIG)]


@pytest.mark.parametrize("user", [False, True])
def test_both_units_bound_open_files_tasks_and_memory(user):
    text = render_unit("/opt/voiced/bin/voiced", user=user)
    assert int(values(text, "LimitNOFILE")[0]) >= 1024
    assert int(values(text, "TasksMax")[0]) >= 128
    assert values(text, "MemoryMax")[0].endswith("G")


def test_system_unit_is_hardened_but_reaches_sound_cards_and_gpus():
    text = render_unit("/opt/voiced/bin/voiced")
    assert values(text, "ProtectSystem") == ["strict"]
    assert values(text, "PrivateDevices") == ["no"]  # it would hide /dev/dri, /dev/kfd, /dev/snd
    assert values(text, "DevicePolicy") == ["closed"]
    assert set(values(text, "DeviceAllow")) == {
        "char-alsa rw",
        "char-drm rw",
        "char-kfd rw",
        "char-nvidia* rw",
    }
    assert set(values(text, "SupplementaryGroups")[0].split()) == {"audio", "video", "render"}
    assert values(text, "CapabilityBoundingSet") == [""]
    assert values(text, "MemoryDenyWriteExecute") == []  # JIT kernels need W+X memory
    assert "#Environment=HSA_OVERRIDE_GFX_VERSION=10.3.0" in text


@needs_analyze
def test_systemd_analyze_verifies_the_installed_system_unit(tmp_path):
    plan = plan_install(prefix=tmp_path)
    apply_plan(plan)
    assert verify(plan.unit_path) == []


@needs_analyze
def test_systemd_analyze_verifies_the_committed_units(tmp_path):
    assert verify(REPO / "systemd/voiced.service") == []
    assert verify(REPO / "systemd/voiced-user.service", user=True, tmp=tmp_path) == []


@needs_analyze
def test_systemd_analyze_check_catches_a_broken_unit(tmp_path):
    broken = tmp_path / "voiced.service"
    broken.write_text(render_unit("/nonexistent/voiced").replace("ProtectClock", "ProtectClok"))
    complaints = verify(broken)
    assert any("ProtectClok" in c for c in complaints)
    assert any("/nonexistent/voiced" in c for c in complaints)


def test_install_writes_unit_with_this_interpreters_voiced_and_the_default_config(tmp_path):
    plan = plan_install(prefix=tmp_path)
    written = apply_plan(plan)
    unit = tmp_path / "etc/systemd/system/voiced.service"
    config = tmp_path / "etc/voiced/voiced.toml"
    home, sentences = config.parent / "home.yaml", config.parent / "sentences"
    assert written == [str(unit), str(config), str(home), str(sentences)]
    assert home.read_text() == (REPO / "config/home.yaml").read_text()
    assert (sentences / "example.yaml").is_file()
    assert values(unit.read_text(), "ExecStart") == [f"{voiced_command()} run"]
    assert Path(voiced_command().split()[0]).is_file()
    assert config.read_text() == (REPO / "config/voiced.toml").read_text()


def test_install_keeps_an_existing_config(tmp_path):
    config = tmp_path / "etc/voiced/voiced.toml"
    config.parent.mkdir(parents=True)
    config.write_text('site_id = "kitchen"\n')
    plan = plan_install(prefix=tmp_path)
    assert plan.config_source is None
    apply_plan(plan)
    assert config.read_text() == 'site_id = "kitchen"\n'


def test_user_install_goes_to_the_users_systemd_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    plan = plan_install(user=True, prefix=tmp_path, home=Path("/home/alice"))
    assert plan.unit_path == tmp_path / "home/alice/.config/systemd/user/voiced.service"
    assert plan.config_path == tmp_path / "home/alice/.config/voiced/voiced.toml"
    assert "systemctl --user enable --now voiced.service" in plan.commands
    assert values(plan.unit_text, "WantedBy") == ["default.target"]
    assert values(plan.unit_text, "DynamicUser") == []  # a user manager cannot do that


def test_a_voiced_under_home_gets_read_only_home_and_a_warning(tmp_path):
    plan = plan_install(prefix=tmp_path, exec_start="/home/alice/.venv/bin/voiced")
    assert values(plan.unit_text, "ProtectHome") == ["read-only"]
    assert any("/opt/voiced" in w for w in plan.warnings)


def test_a_private_folder_is_not_readable_by_the_services_user():
    base = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's tmp_path sits in a 0700 folder
    try:
        base.chmod(0o755)
        private = base / "private"
        private.mkdir(mode=0o700)
        script = private / "voiced"
        script.write_text("#!/bin/sh\n")
        script.chmod(0o755)
        assert not readable_by_others(script)
        private.chmod(0o755)
        assert readable_by_others(script)
    finally:
        shutil.rmtree(base)


def test_dry_run_prints_the_unit_and_commands_and_writes_nothing(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    service_install.configure_install_parser(parser)
    args = parser.parse_args(["--dry-run", "--prefix", str(tmp_path)])
    assert run_install_service(args) == 0
    out = capsys.readouterr().out
    assert "Type=notify" in out
    assert "systemctl daemon-reload" in out
    assert "systemctl enable --now voiced.service" in out
    assert list(tmp_path.iterdir()) == []
