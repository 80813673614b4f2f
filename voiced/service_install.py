"""``voiced install-service``: write the systemd unit (system or user) and a default config.

The unit text lives here, rendered with the path of the ``voiced`` that runs the installer;
``systemd/voiced.service`` in the source tree is the same text rendered for
``/usr/bin/env voiced`` (a test keeps the two identical). systemctl is never run here: the
commands to run are printed, so a dry run and a real run say the same thing.
"""

from __future__ import annotations

import argparse
import os
import shutil
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from voiced.config import EXIT_CONFIG  # a config error must not be restarted in a loop

REPO_UNIT_EXEC = "/usr/bin/env voiced"

_SYSTEM_UNIT = """\
# voiced: the voice pipeline daemon as a hardened system service.
# Written by `voiced install-service`. Change settings with `systemctl edit voiced` (a drop-in)
# rather than here, so a re-install keeps them. Troubleshooting: `voiced doctor`.

[Unit]
Description=voiced voice pipeline daemon (wake word, Whisper, intents, Piper, MQTT)
Wants=network-online.target
After=network-online.target sound.target mosquitto.service
# Five failed starts within ten minutes: give up instead of looping.
StartLimitIntervalSec=600
StartLimitBurst=5

[Service]
# READY=1 is sent only after every stage has loaded its model and run a warm-up inference.
Type=notify
NotifyAccess=main
ExecStart={exec_start} run
# SIGHUP re-reads the config: live settings (log_level, vad, conversation, timeouts) apply at
# once; stage changes are logged as needing a restart. The process keeps running either way.
# The shell's own kill: minimal systems and containers have no /bin/kill (procps).
ExecReload=/bin/sh -c 'kill -HUP ${{MAINPID}}'
# Relative paths in the config (e.g. the wav sink's "answers") land in the state directory.
WorkingDirectory=%S/voiced
# Model load and warm-up: seconds on a CPU, minutes for a first ROCm kernel compile.
TimeoutStartSec=300
# SIGTERM: stop listening, finish the run in flight (pipeline.shutdown_grace, 10 s), flush the
# MQTT queue (flush_timeout, 5 s), publish "offline", exit 0. 30 s covers that with room.
TimeoutStopSec=30
# WATCHDOG=1 comes from the event loop itself every WatchdogSec/2: a hung loop is restarted.
WatchdogSec=30
Restart=on-failure
RestartSec=5
RestartPreventExitStatus={exit_config}
# Bounds for months unattended: a leak or a flood of connections ends in a clean restart
# instead of taking the machine with it. Raise MemoryMax in a drop-in for big GPU models.
LimitNOFILE=4096
TasksMax=512
MemoryMax=8G

# Configuration: /etc/voiced/voiced.toml. Secrets (e.g. the MQTT password) can go in
# /etc/voiced/voiced.env (mode 0600, read by systemd as root) as
# VOICED_STAGES__SERVICE__MQTT__PASSWORD=..., so the TOML file can stay world-readable.
ConfigurationDirectory=voiced
Environment=VOICED_CONFIG=%E/voiced/voiced.toml
EnvironmentFile=-%E/voiced/voiced.env
Environment=PYTHONUNBUFFERED=1
# Threads (ASR workers, MQTT, Wyoming) each growing a glibc malloc arena raise RSS through
# fragmentation over months; two arenas keep it flatter. The daemon itself fixes glibc's
# mmap/trim thresholds and gives freed heap memory back every 5 s (docs/limits.md, Memory).
Environment=MALLOC_ARENA_MAX=2
# Models, converted weights and kernel caches go to /var/cache/voiced; $HOME is the state dir
# because libraries that write to ~/.cache or ~/.config must not touch a real home.
StateDirectory=voiced
CacheDirectory=voiced
Environment=HOME=%S/voiced
Environment=XDG_CACHE_HOME=%C/voiced
Environment=VOICED_CACHE_DIR=%C/voiced/models
Environment=HF_HOME=%C/voiced/huggingface
Environment=MIOPEN_USER_DB_PATH=%C/voiced/miopen
Environment=MIOPEN_CUSTOM_CACHE_DIR=%C/voiced/miopen
# Whisper's encoder has two convolutions: MIOpen's exhaustive kernel search would cost the
# first start seconds per input shape for little gain.
Environment=MIOPEN_FIND_MODE=FAST

# ROCm on a consumer Radeon that is not in ROCm's support list: the libraries have no kernels
# for its gfx target and fail with hipErrorNoBinaryForGpu ("invalid device function"). Tell
# the runtime to use the nearest supported target (`voiced doctor` prints the right value):
#   RDNA2 gfx1031/gfx1032/gfx1034/gfx1035/gfx1036 (RX 6700/6600/6500, 680M) -> 10.3.0
#   RDNA3 gfx1101/gfx1102/gfx1103 (RX 7800/7700/7600, 780M)                  -> 11.0.0
# Not needed (and harmful) on supported cards: gfx1030, gfx1100, Instinct, RDNA4.
#Environment=HSA_OVERRIDE_GFX_VERSION=10.3.0
# Several GPUs: pick which ones the service sees.
#Environment=HIP_VISIBLE_DEVICES=0
#Environment=CUDA_VISIBLE_DEVICES=0

# -- identity -----------------------------------------------------------------------------
# A throw-away user allocated at start; it owns only the state and cache directories.
# For a fixed user instead: `useradd --system voiced`, then User=voiced and DynamicUser=no.
DynamicUser=yes
# Sound cards (/dev/snd: audio), GPUs (/dev/dri: video and render; /dev/kfd: render).
SupplementaryGroups=audio video render

# -- hardening ----------------------------------------------------------------------------
ProtectSystem=strict
ProtectHome={protect_home}
PrivateTmp=yes
PrivateMounts=yes
NoNewPrivileges=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
# ProcSubset=pid would hide /proc/cpuinfo and /proc/meminfo, which torch, onnxruntime and
# CTranslate2 read to size their thread pools and pick CPU kernels: left at "all".
RestrictNamespaces=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RemoveIPC=yes
CapabilityBoundingSet=
AmbientCapabilities=
# PortAudio/ALSA capture does not ask for SCHED_FIFO and voiced buffers 20 ms chunks, so
# realtime scheduling is not needed; set RestrictRealtime=no for a JACK/realtime setup.
RestrictRealtime=yes
# MemoryDenyWriteExecute stays off: oneDNN and MKL (torch, onnxruntime, CTranslate2 on the
# CPU) generate their GEMM kernels at run time (Xbyak JIT, writable then executable memory),
# and the HIP/CUDA runtimes load JIT-compiled GPU code objects; with it they fail or crash.
#MemoryDenyWriteExecute=yes
# AF_NETLINK: getifaddrs() (zeroconf for Wyoming discovery, interface addresses).
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
SystemCallArchitectures=native
# @resources: thread affinity and NUMA memory policy (OpenMP, ROCr/HSA, onnxruntime).
SystemCallFilter=@system-service @resources
SystemCallFilter=~@privileged
SystemCallErrorNumber=EPERM
UMask=0027

# -- devices ------------------------------------------------------------------------------
# PrivateDevices=yes would replace /dev with a minimal copy without /dev/snd, /dev/dri,
# /dev/kfd and /dev/nvidia*: no sound and no GPU. Instead, keep /dev and allow-list devices.
PrivateDevices=no
DevicePolicy=closed
# Sound cards (ALSA)
DeviceAllow=char-alsa rw
# AMD/Intel GPUs (/dev/dri/card*, /dev/dri/renderD*) and ROCm compute (/dev/kfd)
DeviceAllow=char-drm rw
DeviceAllow=char-kfd rw
# NVIDIA: nvidia (or nvidia-frontend), nvidia-uvm, nvidia-caps, nvidia-modeset. Groups are
# looked up when the unit starts: load nvidia-uvm at boot (modules-load.d) or CUDA fails.
DeviceAllow=char-nvidia* rw

[Install]
WantedBy=multi-user.target
"""

_USER_UNIT = """\
# voiced as a user service (`systemctl --user`): runs in your login session, so it can use
# your PipeWire/PulseAudio sound server and your own Python environment under $HOME.
# Written by `voiced install-service --user`. To run it while you are logged out:
#   loginctl enable-linger $USER
# Your user must be in the audio, video and render groups for sound cards and GPUs
# (`voiced doctor` checks); a user unit cannot add groups itself.

[Unit]
Description=voiced voice pipeline daemon (user service)
After=pipewire.service pipewire-pulse.service pulseaudio.service
StartLimitIntervalSec=600
StartLimitBurst=5

[Service]
Type=notify
NotifyAccess=main
ExecStart={exec_start} run
ExecReload=/bin/sh -c 'kill -HUP ${{MAINPID}}'
TimeoutStartSec=300
TimeoutStopSec=30
WatchdogSec=30
Restart=on-failure
RestartSec=5
RestartPreventExitStatus={exit_config}
# Bounds for months unattended: a leak or a flood of connections ends in a clean restart
# instead of taking the machine with it. Raise MemoryMax in a drop-in for big GPU models.
LimitNOFILE=4096
TasksMax=512
MemoryMax=8G
# ~/.config/voiced/voiced.toml; secrets may go in ~/.config/voiced/voiced.env.
Environment=VOICED_CONFIG=%E/voiced/voiced.toml
EnvironmentFile=-%E/voiced/voiced.env
Environment=PYTHONUNBUFFERED=1
# Threads (ASR workers, MQTT, Wyoming) each growing a glibc malloc arena raise RSS through
# fragmentation over months; two arenas keep it flatter. The daemon itself fixes glibc's
# mmap/trim thresholds and gives freed heap memory back every 5 s (docs/limits.md, Memory).
Environment=MALLOC_ARENA_MAX=2
StateDirectory=voiced
CacheDirectory=voiced
WorkingDirectory=%S/voiced
Environment=VOICED_CACHE_DIR=%C/voiced/models
# ROCm on a consumer Radeon missing from ROCm's support list (see `voiced doctor`):
#   gfx1031/gfx1032/gfx1034/gfx1035/gfx1036 -> 10.3.0; gfx1101/gfx1102/gfx1103 -> 11.0.0
#Environment=HSA_OVERRIDE_GFX_VERSION=10.3.0
NoNewPrivileges=yes
LockPersonality=yes
RestrictSUIDSGID=yes
SystemCallArchitectures=native

[Install]
WantedBy=default.target
"""


@dataclass
class InstallPlan:
    """What an install writes, and what to tell the user."""

    unit_path: Path
    unit_text: str
    config_path: Path
    config_source: Path | None  # None: the config exists already (kept)
    commands: list[str]
    warnings: list[str] = field(default_factory=list)


def render_unit(exec_start: str, user: bool = False, protect_home: str = "yes") -> str:
    """The unit text with ``ExecStart={exec_start} run``."""
    template = _USER_UNIT if user else _SYSTEM_UNIT
    return template.format(
        exec_start=exec_start, exit_config=EXIT_CONFIG, protect_home=protect_home
    )


def voiced_command() -> str:
    """How to start this installation's voiced: its console script, else ``python -m``."""
    script = Path(sys.executable).parent / "voiced"
    if script.is_file() and os.access(script, os.X_OK):
        return str(script)
    return f"{sys.executable} -m voiced.cli"


def default_config_source() -> Path | None:
    """The documented default config: ``config/voiced.toml`` beside the package (source tree)."""
    candidate = Path(__file__).resolve().parent.parent / "config" / "voiced.toml"
    return candidate if candidate.is_file() else None


def readable_by_others(path: Path) -> bool:
    """Whether a user that is neither owner nor group (the DynamicUser) can reach ``path``."""
    path = path.resolve() if path.exists() else path
    for parent in reversed(path.parents):
        try:
            if not parent.stat().st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    try:
        return bool(path.stat().st_mode & stat.S_IROTH)
    except OSError:
        return False


def plan_install(
    user: bool = False,
    prefix: Path | None = None,
    exec_start: str | None = None,
    home: Path | None = None,
) -> InstallPlan:
    """Work out the unit and config paths and the unit text; writes nothing."""
    root = prefix or Path("/")
    exec_start = exec_start or voiced_command()
    program = Path(exec_start.split()[0])
    warnings: list[str] = []
    if user:
        home = home or Path.home()
        config_home = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
        unit_dir = _under(root, config_home / "systemd" / "user")
        config_path = _under(root, config_home / "voiced" / "voiced.toml")
        text = render_unit(exec_start, user=True)
        ctl = "systemctl --user"
        commands = [
            f"{ctl} daemon-reload",
            f"{ctl} enable --now voiced.service",
            "journalctl --user -u voiced -f",
            "loginctl enable-linger $USER   # keep it running when you log out",
        ]
    else:
        protect_home = "yes"
        if _is_under_home(program):
            protect_home = "read-only"
            warnings.append(
                f"{program} is under a home directory: the unit uses ProtectHome=read-only so "
                "the service can read it. A venv in /opt/voiced is the better home for a "
                "system service (python3 -m venv /opt/voiced && /opt/voiced/bin/pip install "
                "voiced), or use --user."
            )
        if program.is_absolute() and not readable_by_others(program):
            warnings.append(
                f"{program} (or a folder above it) is not readable by other users; the "
                "service's DynamicUser will fail to start it (status 203/EXEC). Install voiced "
                "where other users can read it, e.g. a venv in /opt/voiced."
            )
        unit_dir = _under(root, Path("/etc/systemd/system"))
        config_path = _under(root, Path("/etc/voiced/voiced.toml"))
        text = render_unit(exec_start, protect_home=protect_home)
        commands = [
            "systemctl daemon-reload",
            "systemctl enable --now voiced.service",
            "journalctl -u voiced -f",
        ]
    source = None if config_path.exists() else default_config_source()
    if not config_path.exists() and source is None:
        warnings.append(
            f"no default config found to copy; write {config_path} yourself "
            "(voiced runs on built-in defaults until then)"
        )
    commands.insert(0, f"voiced --config {config_path} doctor   # check GPU, audio, MQTT, models")
    return InstallPlan(unit_dir / "voiced.service", text, config_path, source, commands, warnings)


def _under(root: Path, path: Path) -> Path:
    return root / path.relative_to(path.anchor) if root != Path("/") else path


def _is_under_home(path: Path) -> bool:
    return path.is_absolute() and (path.parts[1:2] in (("home",), ("root",)))


def apply_plan(plan: InstallPlan) -> list[str]:
    """Write the unit and (if absent) the config; returns what was written."""
    written = []
    plan.unit_path.parent.mkdir(parents=True, exist_ok=True)
    plan.unit_path.write_text(plan.unit_text)
    plan.unit_path.chmod(0o644)
    written.append(str(plan.unit_path))
    if plan.config_source is not None and not plan.config_path.exists():
        plan.config_path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(plan.config_source, plan.config_path)
        plan.config_path.chmod(0o644)
        written.append(str(plan.config_path))
        # The home (areas, entities) and custom sentences the default config refers to.
        for name in ("home.yaml", "sentences"):
            src, dst = plan.config_source.parent / name, plan.config_path.parent / name
            if src.exists() and not dst.exists():
                if src.is_dir():
                    shutil.copytree(src, dst)
                else:
                    shutil.copyfile(src, dst)
                written.append(str(dst))
    return written


# -- CLI ------------------------------------------------------------------------------------

HELP = "install voiced as a systemd service (system unit, or --user)"


def configure_install_parser(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--user",
        action="store_true",
        help="a user unit in ~/.config/systemd/user (your sound server, your venv)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the unit and what would be written; write nothing",
    )
    p.add_argument(
        "--prefix",
        type=Path,
        metavar="DIR",
        help="write under DIR instead of / (packaging, staging)",
    )
    p.add_argument(
        "--exec",
        dest="exec_start",
        metavar="COMMAND",
        help="the command that starts voiced (default: this installation's voiced)",
    )


def run_install_service(args: argparse.Namespace) -> int:
    plan = plan_install(user=args.user, prefix=args.prefix, exec_start=args.exec_start)
    out = sys.stdout
    if args.dry_run:
        out.write(f"# would write {plan.unit_path}:\n{plan.unit_text}\n")
        if plan.config_source is not None:
            out.write(f"# would copy {plan.config_source} -> {plan.config_path}\n")
        elif plan.config_path.exists():
            out.write(f"# would keep {plan.config_path}\n")
    else:
        try:
            written = apply_plan(plan)
        except PermissionError as exc:
            print(
                f"voiced install-service: {exc}; run it with sudo (or use --user)", file=sys.stderr
            )
            return 1
        for path in written:
            out.write(f"wrote {path}\n")
        if plan.config_source is None and plan.config_path.exists():
            out.write(f"kept {plan.config_path}\n")
    for warning in plan.warnings:
        out.write(f"warning: {warning}\n")
    out.write("\nthen run:\n" + "".join(f"  {c}\n" for c in plan.commands))
    out.write(
        f"\nedit {plan.config_path}: as a service voiced needs a live source "
        '(pipeline.source = ["sounddevice"]; or source = [] with service "wyoming" for '
        "satellites); with the file source it processes the file and exits.\n"
    )
    return 0
