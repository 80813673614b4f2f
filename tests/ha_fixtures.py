"""A real Home Assistant core for tests: installed from PyPI, started on 127.0.0.1.

* ``ha_venv()``: Home Assistant ``HA_VERSION`` in its own venv of Debian's Python
  (``debian_python``), cached under ``~/.cache/voiced-tests/homeassistant-<version>-py<X.Y>/``
  (built when missing: ~5 min and 1.1 GB, mostly downloads), with the requirements of the
  integrations the tests load installed up front (read from their ``manifest.json``), so Home
  Assistant installs nothing while it runs. ``python tests/ha_fixtures.py`` builds it
  (``scripts/test`` does, before pytest).
* ``HomeAssistant``: one Home Assistant process with a throwaway config directory, onboarded
  (an owner and a long-lived token, no browser), with small REST and WebSocket helpers.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import debian_python
from mqtt_fixtures import free_port, wait_port
from websockets.sync.client import connect

HA_VERSION = "2026.11.0"
"""The newest release; it needs Python >= 3.14.2, taken from Debian (``debian_python``)."""
COMPONENTS = (
    "api", "config", "websocket_api", "onboarding", "intent", "conversation",
    "assist_pipeline", "assist_satellite", "stt", "tts", "wake_word", "ffmpeg", "mqtt",
    "wyoming", "file_upload", "person", "auth", "http", "homeassistant", "frontend",
    "esphome",
)  # fmt: skip
"""Integrations the tests load (Home Assistant loads their dependencies too)."""
CACHE = Path(os.environ.get("VOICED_TEST_CACHE", Path.home() / ".cache" / "voiced-tests"))
CLIENT = "http://127.0.0.1/"  # the OAuth client id of the tests' own login


class HomeAssistantUnavailable(RuntimeError):
    """No Python that can run Home Assistant ``HA_VERSION`` on this machine."""


def ha_venv() -> Path:
    """The cached venv with Home Assistant; built (under a lock) when missing."""
    target = CACHE / f"homeassistant-{HA_VERSION}-py{debian_python.VERSION}"
    if (target / "ready").exists():
        return _topped_up(target)
    root = _python_root()
    with open(CACHE / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another test process may be building it
        if (target / "ready").exists():
            return target
        build = target.with_name(target.name + ".partial")
        shutil.rmtree(build, ignore_errors=True)
        python = debian_python.make_venv(root, build)
        pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, f"homeassistant=={HA_VERSION}"], check=True)
        requirements = subprocess.run(
            [str(python), "-c", _REQUIREMENTS, *COMPONENTS],
            capture_output=True, text=True, check=True,
        ).stdout.split()  # fmt: skip
        subprocess.run([*pip, *at_most(requirements)], check=True, env=_build_env(root))
        (build / "ready").write_text(" ".join(requirements) + "\n")
        shutil.rmtree(target, ignore_errors=True)
        build.rename(target)  # `bin/python -m ...` still works in a moved venv
    return target


def _topped_up(target: Path) -> Path:
    """A cached venv built before an integration joined ``COMPONENTS`` gets its requirements."""
    python = str(target / "bin" / "python")
    installed = (target / "ready").read_text().split()
    wanted = subprocess.run(
        [python, "-c", _REQUIREMENTS, *COMPONENTS], capture_output=True, text=True, check=True
    ).stdout.split()
    missing = [r for r in wanted if r not in installed]
    if missing:
        with open(CACHE / f"{target.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            subprocess.run(
                [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 *at_most(missing)],
                check=True, env=_build_env(_python_root()),
            )  # fmt: skip
            (target / "ready").write_text(" ".join(sorted({*installed, *missing})) + "\n")
    return target


def at_most(requirements: list[str]) -> list[str]:
    """Home Assistant's ``name==X`` pins as ``name<=X``: the pinned release where the package
    index has it, else the newest before it (Home Assistant 2026.11's esphome pins
    aioesphomeapi 46.25.0, which the index here lacks: 46.23.0 is installed)."""
    return [r.replace("==", "<=", 1) for r in requirements]


def _python_root() -> Path:
    try:
        return debian_python.python_root(CACHE)
    except (debian_python.DebianPythonUnavailable, subprocess.SubprocessError) as exc:
        raise HomeAssistantUnavailable(f"Home Assistant {HA_VERSION}: {exc}") from exc


def _build_env(root: Path) -> dict[str, str]:
    """pip's environment: requirements with no wheel for this Python build against Debian's
    Python headers."""
    include = str(debian_python.include_dir(root))
    return {**os.environ, "C_INCLUDE_PATH": include, "CPLUS_INCLUDE_PATH": include}


# Prints the requirements of the named integrations and of every integration they depend on.
_REQUIREMENTS = """
import json, sys
from pathlib import Path
import homeassistant.components as components
root = Path(components.__file__).parent
todo, seen, wanted = list(sys.argv[1:]), set(), []
while todo:
    name = todo.pop()
    if name in seen or not (root / name / "manifest.json").exists():
        continue
    seen.add(name)
    manifest = json.loads((root / name / "manifest.json").read_text())
    wanted += [r for r in manifest.get("requirements", []) if r not in wanted]
    todo += manifest.get("dependencies", []) + manifest.get("after_dependencies", [])
print(" ".join(sorted(wanted)))
"""

CONFIGURATION = """\
homeassistant:
  name: voiced test home
  unit_system: metric
  time_zone: UTC
  currency: EUR
  country: US
  language: en
  latitude: 0
  longitude: 0
  elevation: 0
  internal_url: http://127.0.0.1:{port}
api:
config:
websocket_api:
onboarding:
intent:
conversation:
assist_pipeline:
stt:
tts:
wake_word:
ffmpeg:
logger:
  default: warning
"""


class HomeAssistant:
    """A Home Assistant core process on 127.0.0.1 with a throwaway config directory."""

    def __init__(self, venv: Path, folder: Path) -> None:
        self.venv = venv
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = ""
        self.process: subprocess.Popen[bytes] | None = None
        self.started_seconds = 0.0
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "configuration.yaml").write_text(CONFIGURATION.format(port=self.port))
        # HTTP settings live in .storage: from configuration.yaml they would be a trial config
        # that reverts to port 8123 on every interface after 5 minutes
        storage = folder / ".storage"
        storage.mkdir(exist_ok=True)
        (storage / "http").write_text(json.dumps({
            "version": 1, "minor_version": 1, "key": "http",
            "data": {"server_host": ["127.0.0.1"], "server_port": self.port},
        }))  # fmt: skip

    # -- life cycle ----------------------------------------------------------------------------

    def start(self, timeout: float = 240.0, onboard: bool = True) -> None:
        """Start Home Assistant; the first start also onboards it (an owner and a token)."""
        started = time.monotonic()
        self.log = open(self.folder / "stdout.log", "wb")  # noqa: SIM115 (closed in stop())
        self.process = subprocess.Popen(
            [str(self.venv / "bin" / "python"), "-m", "homeassistant", "--config",
             str(self.folder), "--skip-pip", "--log-file", str(self.folder / "ha.log")],
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_port(self.port, timeout)
        self._until(lambda: self._get_status("/api/onboarding") == 200, timeout, "onboarding")
        if onboard:
            self.onboard()
        self._until(lambda: self.get("/api/config").get("state") == "RUNNING", timeout, "start")
        self.started_seconds = time.monotonic() - started

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None
        with contextlib.suppress(AttributeError):
            self.log.close()

    def log_tail(self, lines: int = 60) -> str:
        path = self.folder / "ha.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def onboard(self) -> None:
        """An owner account, a login and a long-lived token, as the browser would make them."""
        user = self._request(
            "POST", "/api/onboarding/users",
            {"client_id": CLIENT, "name": "Test", "username": "test", "password": "test-pass-1",
             "language": "en"},
            auth=False,
        )  # fmt: skip
        form = urllib.parse.urlencode(
            {"grant_type": "authorization_code", "code": user["auth_code"], "client_id": CLIENT}
        ).encode()
        request = urllib.request.Request(f"{self.url}/auth/token", data=form, method="POST")
        with urllib.request.urlopen(request, timeout=30) as reply:
            access = json.loads(reply.read())["access_token"]
        self.token = access
        self.token = self.ws("auth/long_lived_access_token", client_name="voiced", lifespan=30)

    # -- APIs ----------------------------------------------------------------------------------

    def get(self, path: str) -> Any:
        return self._request("GET", path)

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._request("POST", path, body or {})

    def delete(self, path: str) -> Any:
        return self._request("DELETE", path)

    def post_raw(self, path: str, data: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method="POST",
            headers={"Authorization": f"Bearer {self.token}", **headers},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=60) as reply:
                return reply.status, reply.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def get_raw(self, path: str) -> bytes:
        request = urllib.request.Request(
            f"{self.url}{path}", headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.read()

    def ws(self, kind: str, **data: Any) -> Any:
        """One WebSocket API command on a fresh connection; its result."""
        with connect(self.url.replace("http", "ws", 1) + "/api/websocket") as socket:
            json.loads(socket.recv())
            socket.send(json.dumps({"type": "auth", "access_token": self.token}))
            if json.loads(socket.recv()).get("type") != "auth_ok":
                raise RuntimeError("Home Assistant refused the test's token")
            socket.send(json.dumps({"id": 1, "type": kind, **data}))
            while True:
                answer = json.loads(socket.recv(timeout=60))
                if answer.get("id") == 1 and answer.get("type") == "result":
                    break
        if not answer.get("success"):
            raise RuntimeError(f"{kind}: {answer.get('error')}")
        return answer.get("result")

    def config_flow(self, handler: str, *steps: dict[str, Any]) -> dict[str, Any]:
        """Run an integration's config flow through the REST API, one form per step."""
        result = self.post("/api/config/config_entries/flow", {"handler": handler})
        for step in steps:
            if result.get("type") != "form":
                break
            result = self.post(f"/api/config/config_entries/flow/{result['flow_id']}", step)
        if result.get("type") != "create_entry":
            raise RuntimeError(f"{handler} config flow did not create an entry: {result}")
        return result

    def state(self, entity_id: str) -> dict[str, Any] | None:
        try:
            return self.get(f"/api/states/{entity_id}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return None
            raise

    def wait(self, predicate: Any, timeout: float = 30.0, what: str = "condition") -> Any:
        return self._until(predicate, timeout, what)

    # -- internals -----------------------------------------------------------------------------

    def _request(
        self, method: str, path: str, body: dict[str, Any] | None = None, auth: bool = True
    ) -> Any:
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self.token}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method,
                                         headers=headers)  # fmt: skip
        with urllib.request.urlopen(request, timeout=60) as reply:
            raw = reply.read()
        return json.loads(raw) if raw else None

    def _get_status(self, path: str) -> int:
        try:
            with urllib.request.urlopen(f"{self.url}{path}", timeout=5) as reply:
                return reply.status
        except urllib.error.HTTPError as exc:
            return exc.code
        except OSError:
            return 0

    def _until(self, predicate: Any, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"Home Assistant exited ({self.process.returncode}):\n"
                                   f"{self.log_tail()}")  # fmt: skip
            try:
                result = predicate()
            except (OSError, ValueError, RuntimeError):
                result = None
            if result:
                return result
            if time.monotonic() > deadline:
                raise TimeoutError(f"Home Assistant: {what} not done in {timeout} s:\n"
                                   f"{self.log_tail()}")  # fmt: skip
            time.sleep(0.1)


if __name__ == "__main__":
    print(ha_venv())
