"""Installing: the wheel builds without setuptools warnings and carries the plugins' data."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.mark.slow
def test_the_wheel_builds_without_setuptools_warnings_and_ships_the_sentence_files(tmp_path):
    tree = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for name in ("voiced", "plugins"):
        shutil.copytree(ROOT / name, tree / name, ignore=ignore)
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(tree), "--no-deps", "--no-build-isolation",
         "-v", "-w", str(tmp_path / "wheel")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "absent from the `packages` configuration" not in output
    assert "_Warning" not in output and "SetuptoolsDeprecationWarning" not in output
    (wheel,) = (tmp_path / "wheel").glob("voiced-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {
        Path(n).name for n in names if n.startswith("voiced_plugins/intent_hassil/sentences/")
    }
    assert shipped == {p.name for p in (ROOT / "plugins/intent_hassil/sentences").glob("*.yaml")}
    assert not [n for n in names if "__pycache__" in n]
