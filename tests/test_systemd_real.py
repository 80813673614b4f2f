"""voiced under a real systemd: a Debian container booted with systemd-nspawn (systemd as PID 1).

voiced is installed inside as docs/service.md tells a user (a venv in /opt/voiced,
``voiced install-service``, /etc/voiced/voiced.toml edited for a live source and the broker),
and everything is checked through ``systemctl`` and ``journalctl`` inside the container. The
broker is a real mosquitto on this machine's 127.0.0.1 (the container shares the network);
speech comes over Wyoming from a "satellite" in the test. The root file system and the venv
with voiced's dependencies are cached (tests/systemd_container.py); voiced itself is
installed fresh each run (``pip install --no-deps``).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mqtt_fixtures import Mosquitto, Recorder, free_port, make_certs
from systemd_container import VENV, Container, base_root, venv_layer, why_not_runnable

REPO = Path(__file__).resolve().parents[1]
UNIT = "voiced.service"
SITE = "garage"  # the satellite's room
WATCHDOG_SEC = 4  # a drop-in shortens the unit's 30 s for the watchdog test

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]
if (reason := why_not_runnable()) is not None:
    pytestmark.append(pytest.mark.skip(reason=f"cannot boot a systemd container: {reason}"))


# -- set-up: boot, install as documented, configure -----------------------------------------


class Service:
    """voiced.service inside the container, seen through systemctl and journalctl."""

    def __init__(self, box: Container, broker: Mosquitto, wyoming_port: int) -> None:
        self.box = box
        self.broker = broker
        self.wyoming_port = wyoming_port

    def show(self, *props: str) -> dict[str, str]:
        out = self.box.sh(f"systemctl show {UNIT} -p {','.join(props)}").stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def prop(self, name: str) -> str:
        return self.show(name)[name]

    def systemctl(self, *args: str, check: bool = True, timeout: float = 400):
        return self.box.sh(f"systemctl {' '.join(args)}", check=check, timeout=timeout)

    def wait(self, predicate, timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {timeout} s; {self.show_state()}")
            time.sleep(0.2)

    def show_state(self) -> dict[str, str]:
        return self.show("ActiveState", "SubState", "StatusText", "MainPID", "NRestarts")

    def ensure_active(self) -> None:
        if self.prop("ActiveState") != "active":
            self.systemctl("reset-failed", UNIT, check=False)
            self.systemctl("start", UNIT)
        assert self.prop("ActiveState") == "active"

    def journal(self, *args: str) -> list[dict[str, Any]]:
        out = self.box.sh(f"journalctl -u {UNIT} -o json --no-pager {' '.join(args)}").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def voiced_entries(self, pid: str | int | None = None) -> list[dict[str, Any]]:
        entries = self.journal(f"_PID={pid}" if pid else "")
        return [e for e in entries if e.get("SYSLOG_IDENTIFIER") == "voiced"]

    def write_config(self, text: str) -> None:
        self.box.path("/etc/voiced/voiced.toml").write_text(text)


def config(wyoming_port: int, mqtt_port: int, log_level: str = "INFO") -> str:
    """/etc/voiced/voiced.toml as a user edits it: a live source (satellites), the broker."""
    return f"""\
site_id = "workshop"
language = "en"
log_level = "{log_level}"

[pipeline]
source = []                        # satellites stream their rooms over Wyoming
asr = ["whisper-ctranslate2"]      # a CPU server without torch
service = ["log", "mqtt", "wyoming"]

[conversation]
follow_up = "off"

[stages.service.mqtt]
host = "127.0.0.1"
port = {mqtt_port}

[stages.service.wyoming]
uri = "tcp://127.0.0.1:{wyoming_port}"

[stages.intent.hassil]
home = "home.yaml"
sentences = ["sentences"]
"""


def copy_source(box: Container) -> str:
    """The checkout, as a user's clone inside the container (tracked and new files)."""
    inside = "/root/voiced"
    dest = box.path(inside)
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, listed):
        src = REPO / name.decode()
        if src.is_file():
            (dest / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name.decode())
    return inside


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mosquitto]:
    folder = tmp_path_factory.mktemp("broker")
    mosquitto = Mosquitto(folder, make_certs(folder / "certs"))
    mosquitto.start()
    yield mosquitto
    mosquitto.stop()


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, broker: Mosquitto) -> Iterator[Service]:
    started = time.monotonic()
    base = base_root()
    layer = venv_layer(base, REPO / "pyproject.toml")
    print(f"\nroot file system and venv layer ready in {time.monotonic() - started:.0f} s")
    box = Container([layer, base], tmp_path_factory.mktemp("container"))
    try:
        box.boot()
        src = copy_source(box)
        # docs/service.md, "System service": the venv in /opt/voiced, then install-service.
        box.sh(f"{VENV}/bin/pip install -q --no-deps --no-build-isolation {src}", timeout=300)
        out = box.sh(f"{VENV}/bin/voiced install-service").stdout
        assert "wrote /etc/systemd/system/voiced.service" in out, out
        assert "write /etc/voiced/voiced.toml yourself" in out, "no config outside a checkout"
        # the documented edit of /etc/voiced/voiced.toml (home and sentences from the clone)
        box.sh(
            f"mkdir -p /etc/voiced && cp -r {src}/config/home.yaml {src}/config/sentences "
            "/etc/voiced/"
        )
        wyoming_port = free_port()
        svc = Service(box, broker, wyoming_port)
        svc.write_config(config(wyoming_port, broker.port))
        box.sh("systemctl daemon-reload && systemctl enable voiced.service")
        print(f"container booted and voiced installed in {time.monotonic() - started:.0f} s")
        yield svc
    finally:
        if box.leader:
            print(box.sh("journalctl -u voiced --no-pager -n 40", check=False).stdout)
        box.shutdown()


def sent_monotonic(entry: dict[str, Any]) -> int:
    """When the process sent a journal entry, on the monotonic clock (µs). journald stamps
    ``__MONOTONIC_TIMESTAMP`` when it reads the entry, which on a busy machine can come after
    systemd handled a later READY=1; ``_SOURCE_REALTIME_TIMESTAMP`` is the kernel's stamp
    of the datagram's arrival on journald's socket, moved here onto the monotonic clock."""
    received = int(entry["__MONOTONIC_TIMESTAMP"])
    sent = entry.get("_SOURCE_REALTIME_TIMESTAMP")
    assert sent is not None, f"journald gave no send time: {sorted(entry)}"
    return received - (int(entry["__REALTIME_TIMESTAMP"]) - int(sent))


def mqtt(broker: Mosquitto) -> Recorder:
    return Recorder(broker.port, ["voiced/#"])


def retained(broker: Mosquitto, topic: str, timeout: float = 5.0) -> bytes:
    """What a new subscriber gets for ``topic`` right away (its retained message)."""
    recorder = Recorder(broker.port, [topic])
    try:
        return recorder.on(topic, timeout)
    finally:
        recorder.close()


# -- start: READY=1 after warm-up, and the status text ---------------------------------------


def test_start_is_active_only_after_ready_and_status_shows_voiceds_text(service: Service):
    service.systemctl("start", "--no-block", UNIT)
    seen: list[tuple[str, str]] = []

    def active() -> bool:
        state = service.show("ActiveState", "StatusText")
        seen.append((state["ActiveState"], state["StatusText"]))
        return state["ActiveState"] == "active"

    service.wait(active, 300, "voiced.service active")
    assert ("activating", "loading models") in seen, seen  # start-up is visible as such
    state = service.show("ActiveEnterTimestampMonotonic", "MainPID", "StatusText")
    assert state["StatusText"].startswith("ready"), state
    # every stage was loaded and warmed up before systemd called the unit active
    loaded = {
        re.search(r"name='([^']+)'", e["MESSAGE"]).group(1): sent_monotonic(e)
        for e in service.voiced_entries(state["MainPID"])
        if e.get("VOICED_EVENT") == "stage-loaded"
    }
    assert {"whisper-ctranslate2", "piper"} <= set(loaded), loaded
    assert max(loaded.values()) < int(state["ActiveEnterTimestampMonotonic"])
    status = service.systemctl("status", UNIT, "--no-pager").stdout
    assert "active (running)" in status
    assert f'Status: "{state["StatusText"]}"' in status
    print(status)


# -- the hardened unit ----------------------------------------------------------------------


def listing(folder: Path) -> dict[str, int]:
    """File -> inode: a file kept (even if updated in place) keeps its inode. SQLite's -wal
    and -shm files come and go with each open database, so they are left out."""
    return {
        str(p.relative_to(folder)): p.stat().st_ino
        for p in folder.rglob("*")
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


def test_dynamic_user_state_and_cache_directories_are_kept_across_restarts(service: Service):
    service.ensure_active()
    state = service.box.path("/var/lib/private/voiced")
    cache = service.box.path("/var/cache/private/voiced")
    uid = int(service.box.sh(f"stat -c %u /proc/{service.prop('MainPID')}").stdout)
    assert 61184 <= uid <= 65519, f"a DynamicUser uid, not {uid}"
    assert state.stat().st_uid == uid and cache.stat().st_uid == uid
    before = listing(cache)
    assert before, "the engines' caches land in /var/cache/voiced"
    # something the service keeps, written by its user in its own sandbox (its working dir)
    as_service = f"nsenter -t {service.prop('MainPID')} -m -S {uid} -G {uid} --wd=/var/lib/voiced"
    service.box.sh(f"{as_service} sh -c 'echo kept > state-probe'")
    service.systemctl("restart", UNIT)
    after = listing(cache)
    lost = [name for name, inode in before.items() if after.get(name) != inode]
    assert not lost, f"lost or recreated on restart: {lost}"
    new_uid = int(service.box.sh(f"stat -c %u /proc/{service.prop('MainPID')}").stdout)
    as_new = f"nsenter -t {service.prop('MainPID')} -m -S {new_uid} -G {new_uid}"
    assert service.box.sh(f"{as_new} cat /var/lib/voiced/state-probe").stdout == "kept\n"


def test_the_service_writes_nothing_outside_its_own_directories(service: Service):
    service.ensure_active()
    uid = int(service.box.sh(f"stat -c %u /proc/{service.prop('MainPID')}").stdout)
    assert service.prop("ProtectSystem") == "strict"
    allowed = ("var/lib/private/voiced", "var/cache/private/voiced", "tmp/systemd-private-")
    # the throw-away overlay layer holds every file changed since boot
    written = [
        str(p.relative_to(service.box.upper))
        for p in service.box.upper.rglob("*")
        if not p.is_symlink() and p.lstat().st_uid == uid
    ]
    outside = [p for p in written if not p.startswith(allowed)]
    assert written and not outside, outside
    # and the kernel refuses it: writes as the service's user in the service's own sandbox
    inside = f"nsenter -t {service.prop('MainPID')} -m -S {uid} -G {uid} touch"
    refused = service.box.sh(f"{inside} /opt/voiced/probe", check=False)
    assert refused.returncode != 0 and "Read-only file system" in refused.stderr
    service.box.sh(f"{inside} /var/lib/voiced/probe /var/cache/voiced/probe")


def test_systemd_analyze_security_exposure_is_recorded(service: Service):
    out = service.box.sh(f"systemd-analyze security {UNIT} --no-pager").stdout
    match = re.search(r"Overall exposure level for voiced\.service: ([\d.]+) (\w+)", out)
    assert match, out[-500:]
    print(f"\nsystemd-analyze security voiced: {match.group(1)} {match.group(2)}")
    assert float(match.group(1)) <= 2.0, "the hardening regressed (docs say 1.6 OK)"


# -- reload ---------------------------------------------------------------------------------


def test_reload_applies_a_changed_log_level_and_returns_to_active(service: Service):
    service.ensure_active()
    pid = service.prop("MainPID")
    asyncio.run(send_unknown_wyoming_event(service.wyoming_port, "voiced-test-before"))
    assert not [e for e in service.voiced_entries(pid) if "voiced-test-before" in e["MESSAGE"]]
    service.write_config(config(service.wyoming_port, service.broker.port, log_level="DEBUG"))
    service.systemctl("reload", UNIT)
    service.wait(lambda: service.prop("StatusText") == "reloaded", 30, "status 'reloaded'")
    service.wait(lambda: service.prop("ActiveState") == "active", 30, "active after reload")
    assert service.prop("MainPID") == pid, "a reload does not restart"
    messages = [e["MESSAGE"] for e in service.voiced_entries(pid)]
    assert any("reload: applied log_level" in m for m in messages), messages[-5:]
    assert any(e.get("MESSAGE", "").startswith("Reloading") for e in service.journal())
    # the level applies at once: an event voiced ignores is now logged (at debug)
    asyncio.run(send_unknown_wyoming_event(service.wyoming_port, "voiced-test-nonsense"))
    service.wait(
        lambda: any(
            e["PRIORITY"] == "7" and "ignoring voiced-test-nonsense" in e["MESSAGE"]
            for e in service.voiced_entries(pid)
        ),
        30,
        "a debug entry after log_level = DEBUG",
    )
    service.write_config(config(service.wyoming_port, service.broker.port))
    service.systemctl("reload", UNIT)
    service.wait(lambda: service.prop("ActiveState") == "active", 30, "active after reload")


async def send_unknown_wyoming_event(port: int, kind: str) -> None:
    from wyoming.client import AsyncTcpClient
    from wyoming.event import Event
    from wyoming.info import Describe

    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Event(kind))
        await client.write_event(Describe().event())  # answered after the event was handled
        while (event := await asyncio.wait_for(client.read_event(), 10)) is not None:
            if event.type == "info":
                return


def test_reload_with_a_broken_file_keeps_the_running_config_and_stays_active(service: Service):
    service.ensure_active()
    pid = service.prop("MainPID")
    good = service.box.path("/etc/voiced/voiced.toml").read_text()
    service.write_config(good.replace('log_level = "INFO"', "log_level = [broken"))
    try:
        service.systemctl("reload", UNIT)
        service.wait(
            lambda: service.prop("StatusText").startswith("reload failed"), 30, "reload failed"
        )
        service.wait(lambda: service.prop("ActiveState") == "active", 30, "active after reload")
        assert service.prop("MainPID") == pid
        failed = [e for e in service.voiced_entries(pid) if "reload failed" in e["MESSAGE"]]
        assert failed and failed[-1]["PRIORITY"] == "3", failed
    finally:
        service.write_config(good)


# -- the journal ----------------------------------------------------------------------------


def command(text: str) -> bytes:
    from speech import silence, steady_piper

    return silence(0.6) + steady_piper(text) + silence(1.2)


async def satellite_run(port: int, audio: bytes, pace: float = 0.0, stop_after: float = 1.0):
    """A satellite in room SITE streams ``audio`` (the first ``stop_after`` of it) as one
    command; returns the connected client (the caller disconnects it)."""
    from wyoming.audio import AudioChunk
    from wyoming.client import AsyncTcpClient
    from wyoming.event import Event
    from wyoming.pipeline import PipelineStage, RunPipeline

    client = AsyncTcpClient("127.0.0.1", port)
    await client.connect()
    await client.write_event(Event("run-satellite", {"name": SITE}))
    await client.write_event(
        RunPipeline(start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS).event()
    )
    step = 1024 * 2
    audio = audio[: int(len(audio) * stop_after)]
    for offset in range(0, len(audio), step):
        await client.write_event(AudioChunk(16000, 2, 1, audio[offset : offset + step]).event())
        if pace:
            await asyncio.sleep(step / 2 / 16000 / pace)
    return client


def test_journal_entries_carry_priorities_and_run_and_site_ids(service: Service):
    service.ensure_active()
    pid = service.prop("MainPID")
    recorder = mqtt(service.broker)
    try:

        async def run() -> None:
            client = await satellite_run(
                service.wyoming_port, command("Please turn on the kitchen light.")
            )
            await asyncio.to_thread(
                recorder.wait_for,
                lambda ms: any(t == f"voiced/{SITE}/event/run-end" for t, _, _ in ms),
                60,
            )
            await client.disconnect()

        asyncio.run(run())
    finally:
        recorder.close()
    entries = service.voiced_entries(pid)
    assert all(e.get("PRIORITY") in ("2", "3", "4", "6", "7") for e in entries)
    assert all(e.get("LOGGER") for e in entries), "one structured entry per record"
    runs = [e for e in entries if e.get("SITE_ID") == SITE and e.get("RUN_ID")]
    kinds = {e["VOICED_EVENT"] for e in runs}
    assert {"run-start", "transcript", "intent", "run-end"} <= kinds, kinds
    assert len({e["RUN_ID"] for e in runs}) == 1
    assert any("kitchen" in e["MESSAGE"].lower() for e in runs if e["VOICED_EVENT"] == "transcript")
    grep = service.box.sh(f"journalctl -u {UNIT} RUN_ID={runs[0]['RUN_ID']} -o cat").stdout
    assert "run-end" in grep  # journalctl FIELD=value finds a run's entries


# -- stop mid-utterance ---------------------------------------------------------------------


def test_stop_mid_utterance_exits_in_time_and_says_offline(service: Service):
    service.ensure_active()
    timeout = float(service.prop("TimeoutStopUSec").rstrip("s") or 30)
    recorder = mqtt(service.broker)
    try:

        async def run() -> float:
            speech = command("turn off the light in the kitchen please")
            client = await satellite_run(service.wyoming_port, speech, pace=1.0, stop_after=0.5)
            await asyncio.to_thread(
                recorder.wait_for,
                lambda ms: (
                    (f"voiced/{SITE}/state", b"listening", False) in ms
                    or (f"voiced/{SITE}/state", b"listening", True) in ms
                ),
                30,
            )
            began = time.monotonic()
            await asyncio.to_thread(service.systemctl, "stop", UNIT)
            took = time.monotonic() - began
            await client.disconnect()
            return took

        took = asyncio.run(run())
    finally:
        recorder.close()
    print(f"\nsystemctl stop mid-utterance took {took:.1f} s (TimeoutStopSec {timeout:.0f})")
    state = service.show("ActiveState", "Result", "ExecMainStatus")
    assert state == {"ActiveState": "inactive", "Result": "success", "ExecMainStatus": "0"}
    assert took < timeout
    assert retained(service.broker, "voiced/status") == b"offline"
    assert retained(service.broker, f"voiced/{SITE}/state") != b"listening"


# -- the watchdog ---------------------------------------------------------------------------


def test_a_frozen_daemon_is_killed_by_the_watchdog_and_restarted(service: Service):
    dropin = service.box.path("/etc/systemd/system/voiced.service.d/50-test-watchdog.conf")
    dropin.parent.mkdir(parents=True, exist_ok=True)
    dropin.write_text(f"[Service]\nWatchdogSec={WATCHDOG_SEC}\n")
    try:
        service.systemctl("daemon-reload")
        service.systemctl("restart", UNIT)
        limits = service.show("RestartUSec", "TimeoutAbortUSec", "NRestarts", "MainPID")
        cache = listing(service.box.path("/var/cache/private/voiced"))
        recorder = mqtt(service.broker)
        try:
            recorder.wait_for(lambda ms: statuses(ms)[-1:] == [b"online"], 30)
            recorder.messages.clear()
            frozen = time.monotonic()
            service.systemctl("kill", "--kill-who=main", "--signal=SIGSTOP", UNIT)
            service.wait(
                lambda: service.prop("MainPID") not in ("0", limits["MainPID"]),
                WATCHDOG_SEC + seconds(limits["TimeoutAbortUSec"]) + 15,
                "a new main process",
            )
            restarted = time.monotonic() - frozen
            service.wait(lambda: service.prop("ActiveState") == "active", 300, "active again")
            status = recorder.wait_for(lambda ms: len(statuses(ms)) >= 2 and statuses(ms), 30)
        finally:
            recorder.close()
        print(f"\nwatchdog: frozen -> new process in {restarted:.1f} s; {limits}")
        assert status[:2] == [b"offline", b"online"], status  # the last will, then back
        assert int(service.prop("NRestarts")) == int(limits["NRestarts"]) + 1
        after = listing(service.box.path("/var/cache/private/voiced"))
        assert all(after.get(name) == inode for name, inode in cache.items()), "caches kept"
        logged = service.box.sh(f"journalctl -u {UNIT} -o cat --no-pager -n 100").stdout
        assert "Watchdog timeout" in logged
    finally:
        dropin.unlink()
        service.systemctl("daemon-reload")
        service.systemctl("restart", UNIT)


def statuses(messages: list[tuple[str, bytes, bool]]) -> list[bytes]:
    return [payload for topic, payload, _ in messages if topic == "voiced/status"]


def seconds(text: str) -> float:
    """systemd's time span ('5s', '1min 30s', '100ms') in seconds."""
    units = {"ms": 0.001, "s": 1, "min": 60, "h": 3600, "us": 1e-6}
    return sum(float(n) * units[u] for n, u in re.findall(r"([\d.]+)(ms|us|min|h|s)", text))


# -- a config error -------------------------------------------------------------------------


def test_a_config_error_fails_the_unit_without_a_restart_loop(service: Service):
    service.ensure_active()
    good = service.box.path("/etc/voiced/voiced.toml").read_text()
    restarts = int(service.prop("NRestarts"))
    service.write_config(good.replace('asr = ["whisper-ctranslate2"]', 'asr = ["no-such-asr"]'))
    try:
        assert service.systemctl("restart", UNIT, check=False).returncode != 0
        pid = service.prop("ExecMainPID")
        time.sleep(seconds(service.prop("RestartUSec")) + 2)  # a restart would have come by now
        state = service.show("ActiveState", "Result", "ExecMainStatus", "NRestarts")
        assert state == {
            "ActiveState": "failed",
            "Result": "exit-code",
            "ExecMainStatus": "2",
            "NRestarts": str(restarts),
        }
        errors = [e for e in service.voiced_entries(pid) if int(e["PRIORITY"]) <= 3]
        assert len(errors) == 1, [e["MESSAGE"] for e in errors]
        assert "configuration error" in errors[0]["MESSAGE"]
        assert "no-such-asr" in errors[0]["MESSAGE"]
    finally:
        service.write_config(good)
        service.systemctl("reset-failed", UNIT, check=False)


# -- the user unit --------------------------------------------------------------------------


def test_the_user_unit_runs_under_a_users_own_service_manager(service: Service):
    """docs/service.md, "User service": install-service --user, systemctl --user, lingering."""
    box = service.box
    box.sh("id alice >/dev/null 2>&1 || useradd --create-home alice")
    box.sh("loginctl enable-linger alice")  # starts user@<uid>.service, the user's manager
    uid = box.sh("id -u alice").stdout.strip()
    service.wait(
        lambda: (
            box.sh(f"systemctl is-active user@{uid}.service", check=False).stdout.strip()
            == "active"
        ),
        60,
        "the user's service manager",
    )
    out = box.sh(f"{VENV}/bin/voiced install-service --user", user="alice").stdout
    assert "wrote /home/alice/.config/systemd/user/voiced.service" in out, out
    user_config = config(free_port(), service.broker.port).replace(
        "port = ", 'prefix = "voiced-alice"\nport = '
    )
    box.sh("mkdir -p ~/.config/voiced && cat > ~/.config/voiced/voiced.toml", user="alice")
    box.path("/home/alice/.config/voiced/voiced.toml").write_text(user_config)
    box.sh("cp -r /etc/voiced/home.yaml /etc/voiced/sentences ~/.config/voiced/", user="alice")
    box.sh("systemctl --user daemon-reload", user="alice")
    try:
        box.sh("systemctl --user start voiced.service", user="alice", timeout=300)
        shown = box.sh(
            "systemctl --user show voiced.service -p ActiveState,StatusText,MainPID", user="alice"
        ).stdout
        state = dict(line.split("=", 1) for line in shown.splitlines())
        assert state["ActiveState"] == "active" and state["StatusText"].startswith("ready")
        assert box.sh(f"stat -c %U /proc/{state['MainPID']}").stdout.strip() == "alice"
        assert retained(service.broker, "voiced-alice/status") == b"online"
        box.sh("systemctl --user reload voiced.service", user="alice")
        service.wait(
            lambda: (
                "StatusText=reloaded"
                in box.sh("systemctl --user show voiced -p StatusText", user="alice").stdout
            ),
            30,
            "the user unit reloaded",
        )
        logged = box.sh("journalctl --user -u voiced -o cat", user="alice").stdout
        assert "ready (no local source)" in logged, "the user reads their own unit's journal"
    finally:
        box.sh("systemctl --user stop voiced.service", user="alice", check=False)
    assert retained(service.broker, "voiced-alice/status") == b"offline"
