"""Plugins import from the core only through its public API (voiced/api/)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import voiced.api

REPO = Path(__file__).resolve().parents[1]
ALLOWED = "voiced.api"


def core_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every ``voiced`` module a file imports, at any depth."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "voiced"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "voiced":  # from voiced import x: x is a submodule or __version__
                found += [(node.lineno, f"voiced.{a.name}") for a in node.names]
            elif node.module.split(".")[0] == "voiced":
                found.append((node.lineno, node.module))
    return found


def test_no_plugin_imports_the_core_but_its_public_api():
    offenders = [
        f"{path.relative_to(REPO)}:{line}: {module}"
        for path in sorted((REPO / "plugins").rglob("*.py"))
        for line, module in core_imports(path)
        if module not in ("voiced", "voiced.__version__")
        and module != ALLOWED
        and not module.startswith(f"{ALLOWED}.")
    ]
    assert offenders == [], "plugins must import voiced.api.* only:\n" + "\n".join(offenders)


def test_the_public_api_modules_re_export_the_core_and_copy_nothing():
    for path in sorted(Path(voiced.api.__file__).parent.glob("*.py")):
        if path.name == "__init__.py":
            continue
        module = importlib.import_module(f"voiced.api.{path.stem}")
        tree = ast.parse(path.read_text())
        defined = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        assert defined == [], f"{path.name} defines code of its own"
        for name in module.__all__:
            value = getattr(module, name)
            home = getattr(value, "__module__", None)
            assert home is None or not home.startswith("voiced.api"), (path.name, name)
