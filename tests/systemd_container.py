"""A Debian container with systemd as PID 1 (debootstrap + systemd-nspawn), for service tests.

Two cached layers under ``~/.cache/voiced-tests/``, each built when missing:

* ``systemd-root-<key>``: ``debootstrap --variant=minbase`` of Debian with systemd, dbus and
  python3 (the mirror is the one this machine's own apt sources name);
* ``systemd-venv-<key>``: an overlay layer on top of it holding ``/opt/voiced``, the venv the
  docs install into, with voiced's dependencies (keyed by pyproject.toml's dependency list;
  the wheels are built here by this machine's pip, which has its index settings and cache,
  and installed offline inside).

A booted container is an overlayfs of both layers with a throw-away upper layer, so every run
starts from the same clean system and anything it writes is visible in ``upper``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

SUITE = "bookworm"
# udev: the package that creates the "render" group (SupplementaryGroups=... render), as on
# any real Debian machine; libpam-systemd: a user's own service manager (user@.service) for
# the --user unit; libstdc++6/libgomp1: onnxruntime and CTranslate2 link them.
PACKAGES = (
    "systemd",
    "systemd-sysv",
    "dbus",
    "udev",
    "libpam-systemd",
    "python3",
    "python3-venv",
    "ca-certificates",
    "libstdc++6",
    "libgomp1",
    "libportaudio2",
)
BUILD_TOOLS = ("setuptools>=68", "wheel")  # so `pip install --no-build-isolation` works
VENV = "/opt/voiced"
CONTAINER_PYTHON = (3, 11)  # Debian 12's python3
LAYOUT_VERSION = "1"  # bump when the way a layer is built changes
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "voiced-tests"


def why_not_runnable() -> str | None:
    """Why this machine cannot boot a container, or None when it can."""
    if os.geteuid() != 0:
        return "systemd-nspawn and debootstrap need root"
    for tool in ("systemd-nspawn", "debootstrap", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is missing (scripts/test installs systemd-container, debootstrap)"
    if "overlay" not in Path("/proc/filesystems").read_text():
        return "the kernel has no overlayfs"
    return None


# -- the Debian mirror ----------------------------------------------------------------------


def _deb822_entries(text: str) -> list[tuple[str, list[str]]]:
    """(uri, suites) of each ``deb`` stanza of a ``.sources`` file."""
    entries = []
    for stanza in re.split(r"\n\s*\n", text):
        lines = [line for line in stanza.splitlines() if ":" in line]
        pairs = (line.partition(":") for line in lines if not line.lstrip().startswith("#"))
        fields = {k.strip().lower(): v.strip() for k, _, v in pairs}
        if "deb" in fields.get("types", "").split():
            suites = fields.get("suites", "").split()
            entries += [(uri, suites) for uri in fields.get("uris", "").split()]
    return entries


def _one_line_entries(text: str) -> list[tuple[str, list[str]]]:
    """(uri, [suite]) of each ``deb`` line of a ``sources.list`` file."""
    entries = []
    for line in text.splitlines():
        words = re.sub(r"\[[^\]]*\]", "", line).split()
        if len(words) >= 3 and words[0] == "deb":
            entries.append((words[1], [words[2]]))
    return entries


def debian_mirror() -> str:
    """The Debian archive this machine's apt uses (a suite-matching entry first)."""
    if os.environ.get("VOICED_TEST_DEBIAN_MIRROR"):
        return os.environ["VOICED_TEST_DEBIAN_MIRROR"]
    entries: list[tuple[str, list[str]]] = []  # (uri, suites)
    files = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for file in (f for f in files if f.is_file()):
        text = file.read_text(errors="replace")
        entries += _deb822_entries(text) if file.suffix == ".sources" else _one_line_entries(text)
    for uri, suites in entries:
        if SUITE in suites:
            return uri
    for uri, _ in entries:  # any Debian archive serves every suite
        if uri.rstrip("/").endswith("/debian"):
            return uri
    raise RuntimeError(
        "no Debian mirror in /etc/apt/sources.list*: set VOICED_TEST_DEBIAN_MIRROR to one"
    )


# -- cached layers --------------------------------------------------------------------------


def _key(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:12]


def _complete(folder: Path) -> bool:
    return (folder.parent / f"{folder.name}.complete").exists()


def _mark_complete(folder: Path) -> None:
    """Record ``folder`` as built, and drop the older builds of the same layer it replaces."""
    (folder.parent / f"{folder.name}.complete").write_text(time.strftime("%FT%T\n"))
    prefix = folder.name.rsplit("-", 1)[0] + "-"
    for old in folder.parent.glob(f"{prefix}*.complete"):
        if old.name != f"{folder.name}.complete":
            shutil.rmtree(old.with_suffix(""), ignore_errors=True)
            old.unlink()


def _run(cmd: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd[:6])}... exit {result.returncode}:\n{result.stdout[-3000:]}"
            f"\n{result.stderr[-3000:]}"
        )
    return result


def base_root() -> Path:
    """The debootstrapped root file system (built when missing, ~1-2 min)."""
    root = cache_root() / f"systemd-root-{_key(SUITE, PACKAGES, LAYOUT_VERSION)}"
    if _complete(root):
        return root
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    _run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            SUITE,
            str(partial),
            debian_mirror(),
        ],
        timeout=1800,
    )
    shutil.rmtree(root, ignore_errors=True)
    partial.rename(root)
    _mark_complete(root)
    return root


def dependencies(pyproject: Path) -> list[str]:
    return list(tomllib.loads(pyproject.read_text())["project"]["dependencies"])


def venv_layer(base: Path, pyproject: Path) -> Path:
    """An overlay layer over ``base`` with /opt/voiced and voiced's dependencies in it."""
    deps = dependencies(pyproject)
    layer = cache_root() / f"systemd-venv-{_key(base.name, deps, BUILD_TOOLS, LAYOUT_VERSION)}"
    if _complete(layer):
        return layer
    if sys.version_info[:2] != CONTAINER_PYTHON:
        raise RuntimeError(
            f"this Python is {sys.version_info[0]}.{sys.version_info[1]}: the wheels it builds "
            f"would not fit Debian {SUITE}'s python3 ({CONTAINER_PYTHON[0]}.{CONTAINER_PYTHON[1]})"
        )
    partial = layer.with_name(layer.name + ".partial")
    work = layer.with_name(layer.name + ".work")
    for folder in (partial, work):
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="voiced-wheels-") as wheels:
        # Same Debian, same Python: the wheels this machine builds fit the container.
        _run([sys.executable, "-m", "pip", "wheel", "-q", "-w", wheels, *deps, *BUILD_TOOLS], 1800)
        merged = Path(tempfile.mkdtemp(prefix="voiced-merged-"))
        mount_overlay(merged, [base], partial, work)
        try:
            script = (
                f"python3 -m venv {VENV} && {VENV}/bin/pip install -q --no-index "
                f"--find-links /wheels {' '.join(_quote(d) for d in [*deps, *BUILD_TOOLS])}"
            )
            _run(
                [
                    "systemd-nspawn",
                    "-q",
                    "-D",
                    str(merged),
                    "--register=no",
                    "--keep-unit",
                    f"--bind-ro={wheels}:/wheels",
                    "/bin/sh",
                    "-c",
                    script,
                ],
                timeout=1800,
            )
        finally:
            umount(merged)
            merged.rmdir()
    shutil.rmtree(work, ignore_errors=True)
    shutil.rmtree(layer, ignore_errors=True)
    partial.rename(layer)
    _mark_complete(layer)
    return layer


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def mount_overlay(merged: Path, lowers: list[Path], upper: Path, work: Path) -> None:
    """``lowers``: the topmost layer first."""
    lower = ":".join(str(p) for p in lowers)
    _run(
        [
            "mount",
            "-t",
            "overlay",
            "overlay",
            "-o",
            f"lowerdir={lower},upperdir={upper},workdir={work}",
            str(merged),
        ],
        timeout=60,
    )


def umount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=60)


# -- a booted container ---------------------------------------------------------------------


class Container:
    """A booted ``systemd-nspawn --boot`` container; ``sh()`` runs a command inside it."""

    def __init__(self, lowers: list[Path], folder: Path) -> None:
        self.folder = folder
        self.upper, self.work, self.root = folder / "upper", folder / "work", folder / "root"
        for path in (self.upper, self.work, self.root):
            path.mkdir(parents=True)
        mount_overlay(self.root, lowers, self.upper, self.work)
        self.console = (folder / "console.log").open("w")
        self.process: subprocess.Popen | None = None
        self.leader = 0

    def boot(self, timeout: float = 120) -> None:
        # The host's network (no --private-network): the broker on its 127.0.0.1 is reachable.
        self.process = subprocess.Popen(
            [
                "systemd-nspawn",
                "-q",
                "-D",
                str(self.root),
                "--boot",
                "--register=no",
                "--keep-unit",
                f"--machine=voiced-test-{os.getpid()}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self.console,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while not self.leader:
            self.leader = self._find_leader()
            self._check_alive(deadline)
        state = ""
        while state not in ("running", "degraded"):
            state = self.sh("systemctl is-system-running", check=False).stdout.strip()
            self._check_alive(deadline)
        if state == "degraded":
            failed = self.sh("systemctl --failed --no-legend", check=False).stdout
            print(f"container booted degraded; failed units:\n{failed}")

    def _check_alive(self, deadline: float) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"systemd-nspawn exited {self.process.returncode}: {self.log()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the container did not boot: {self.log()}")
        time.sleep(0.2)

    def log(self) -> str:
        return (self.folder / "console.log").read_text(errors="replace")[-3000:]

    def _find_leader(self) -> int:
        """The container's PID 1 as the host sees it: nspawn's child."""
        assert self.process is not None
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                text = status.read_text()
            except OSError:
                continue
            ppid = re.search(r"^PPid:\s+(\d+)", text, re.M)
            nspid = re.search(r"^NSpid:\s+(.+)$", text, re.M)
            if ppid and nspid and int(ppid.group(1)) == self.process.pid:  # noqa: SIM102
                if nspid.group(1).split()[-1] == "1":  # PID 1 in its own namespace
                    return int(status.parent.name)
        return 0

    def sh(
        self, command: str, check: bool = True, timeout: float = 120, user: str | None = None
    ) -> subprocess.CompletedProcess:
        """Run ``sh -c command`` inside the container (all its namespaces, a clean env)."""
        env = ["PATH=" + CONTAINER_PATH, "LANG=C.UTF-8", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0"]
        prefix = []
        if user is None:
            env.append("HOME=/root")
        else:  # a login's environment, enough for `systemctl --user` and its journal
            uid = self.sh(f"id -u {user}").stdout.strip()
            env += [f"HOME=/home/{user}", f"USER={user}", f"XDG_RUNTIME_DIR=/run/user/{uid}"]
            prefix = ["runuser", "-u", user, "--"]
        cmd = [
            "nsenter",
            f"--target={self.leader}",
            "--mount",
            "--uts",
            "--ipc",
            "--net",
            "--pid",
            "--cgroup",
            "--root",
            "--wd",
            "--",
            *prefix,
            "/usr/bin/env",
            "-i",
            *env,
            "/bin/sh",
            "-c",
            command,
        ]
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise RuntimeError(
                f"in the container: {command!r} exit {result.returncode}\n"
                f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
            )
        return result

    def path(self, inside: str) -> Path:
        """A path inside the container, as seen from here (through the overlay mount)."""
        return self.root / inside.lstrip("/")

    def shutdown(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # nspawn asks the container's systemd to power off
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.console.close()
        umount(self.root)
