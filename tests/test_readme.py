"""The README's commands, run in order on a fresh clone, work as written.

Every command of the README's ``sh`` blocks is either run (in README order, in a copy of the
tracked files with no .venv, the way a newcomer meets it) or named below with the reason it is
not: a command added to the README without a decision fails the first test here.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from sound_card import SoundCard

ROOT = Path(__file__).parents[1]

NOT_RUN = {  # a command's start: why the test leaves it to a person (or another test)
    "./scripts/test": "runs the whole suite: CI and the lead run it",
    "pip install '.[gpu]'": "torch from your ROCm or CUDA index: GBs, and the wrong build here",
    ".venv/bin/voiced setup": "asks in a terminal: test_setup_terminal.py drives it in a pty",
    "voiced setup --non-interactive": "needs your Home Assistant, broker and USB card: "
    "test_setup_acceptance.py runs it against real ones",
    "arecord ": "a live microphone, until stopped",
    "VOICED_": "environment examples, not commands",
}
TOKEN_RECIPE = "install -m 600 /dev/stdin ~/.config/voiced/ha-token"
RESULTS = {"voiced doctor": (0, 1)}  # 1: something required fails on this machine, with a fix


def readme_blocks(text: str) -> list[list[str]]:
    """The commands of each of the README's ``sh`` blocks, in order, continuation lines joined
    and the trailing comments (two spaces, then #) dropped."""
    blocks = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        commands = []
        for line in block.replace("\\\n", " ").splitlines():
            command = re.split(r"\s{2,}#", line)[0].strip()
            if command and not command.startswith("#"):
                commands.append(re.sub(r"\s+", " ", command))
        blocks.append(commands)
    return blocks


def readme_commands(text: str) -> list[str]:
    return [command for block in readme_blocks(text) for command in block]


def why_not(command: str) -> str | None:
    return next((why for start, why in NOT_RUN.items() if command.startswith(start)), None)


def test_every_readme_command_is_run_or_has_a_reason_not_to_be():
    commands = readme_commands((ROOT / "README.md").read_text())
    assert commands[:2] == ["./scripts/demo", "./scripts/test"]
    assert any(TOKEN_RECIPE in c for c in commands)
    for start in NOT_RUN:
        assert any(c.startswith(start) for c in commands), f"{start!r} is no longer in the README"
    run = [c for c in commands if why_not(c) is None]
    assert "./scripts/demo" in run and "voiced doctor" in run


def test_each_home_assistant_recipe_is_a_config_voiced_accepts_with_a_microphone_and_wake_word(
    tmp_path: Path,
):
    from voiced.daemon import prepare

    text = (ROOT / "README.md").read_text()
    ways = text[text.index("## voiced and Home Assistant: three ways") : text.index("# Reference")]
    recipes = re.findall(r"```toml\n(.*?)```", ways, re.S)
    assert len(recipes) == 3
    for number, recipe in enumerate(recipes, 1):
        path = tmp_path / f"way{number}.toml"
        path.write_text(recipe)
        settings, _ = prepare(path)  # every stage and option checked, as `voiced config` does
        if number == 2:  # the microphones and the wake word are Home Assistant's
            assert settings.pipeline.source == [] and "wyoming" in settings.pipeline.service
            assert settings.stage_options("service", "wyoming")["wake"] == ["openwakeword"]
        else:
            assert settings.pipeline.source == ["sounddevice"], number
            assert settings.pipeline.wake == ["openwakeword"], number
            assert settings.stage_options("wake", "openwakeword")["models"] == ["okay_nabu"]


def test_the_readme_stays_short_before_its_reference_part():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines.index("# Reference") <= 160


def test_the_token_recipe_works_on_a_fresh_machine(tmp_path: Path):
    """No ~/.config yet: the recipe makes the folder (0700) and a 0600 file with the token."""
    text = (ROOT / "README.md").read_text()
    block = next(b for b in re.findall(r"```sh\n(.*?)```", text, re.S) if TOKEN_RECIPE in b)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], input="a-long-token\n",
                          env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]},
                          capture_output=True, text=True, timeout=30)  # fmt: skip
    assert done.returncode == 0, done.stderr
    token = tmp_path / ".config" / "voiced" / "ha-token"
    assert token.read_text() == "a-long-token\n"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert stat.S_IMODE(token.parent.stat().st_mode) == 0o700


@pytest.fixture
def fresh_clone(tmp_path: Path) -> Path:
    """The tracked files of this checkout (what `git clone` gives), nothing built."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                            check=False)  # fmt: skip
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    clone = tmp_path / "voiced"
    for name in listed.stdout.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    return clone


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_readme_commands_run_in_order_on_a_fresh_clone(fresh_clone: Path, card: SoundCard):
    """Each block as one shell (a variable read in one line is used in the next), each command
    checked for its exit status."""
    env = card.env(PATH=f"{fresh_clone / '.venv' / 'bin'}:{os.environ['PATH']}")
    ran = []
    for block in readme_blocks((ROOT / "README.md").read_text()):
        commands = [c for c in block if why_not(c) is None]
        if not commands:
            continue
        script = "\n".join(f'{c}\necho "[readme] $?: {c}" >&2' for c in commands)
        done = subprocess.run(["bash", "-c", script], cwd=fresh_clone, env=env,
                              input="a-long-token\n", capture_output=True, text=True,
                              timeout=1200)  # fmt: skip
        statuses = re.findall(r"^\[readme\] (\d+): (.*)$", done.stderr, re.M)
        assert len(statuses) == len(commands), done.stderr[-4000:]
        for status, command in statuses:
            wanted = RESULTS.get(command, (0,))
            assert int(status) in wanted, f"$ {command}: {status}\n{done.stderr[-4000:]}"
            ran.append(command)
    assert (fresh_clone / "done.wav").is_file() and list((fresh_clone / "answers").glob("*.wav"))
    assert len(ran) >= 12, ran
