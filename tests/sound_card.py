"""A sound card for whole-process tests: ALSA ``file`` devices in a HOME of their own
(tests/asound/asoundrc), a microphone the test speaks into at speaking pace and a loudspeaker
it listens to. Any process started with ``env()`` (setup, the daemon) sees ``voiced_mic`` and
``voiced_speaker``; PortAudio reads the ALSA configuration from $HOME when it starts."""

from __future__ import annotations

import contextlib
import os
import queue
import select
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).parent
DEVICE_RATE = 44100  # what PortAudio reports for the ALSA plugin devices
STEP = DEVICE_RATE * 2 // 50  # 20 ms of 16-bit mono at the device rate


def to_device_rate(pcm16k: bytes) -> bytes:
    from voiced.audio import AudioFormat, StreamConverter

    converter = StreamConverter(AudioFormat(16000, 2, 1), AudioFormat(DEVICE_RATE, 2, 1))
    return converter.convert(pcm16k, last=True)


class SoundCard:
    """Both ends of the test card; silence on the microphone until something is said."""

    def __init__(self, home: Path) -> None:
        self.home = home
        for name in ("mic.fifo", "speaker.fifo"):
            if not (home / name).exists():
                os.mkfifo(home / name)
        template = (TESTS / "asound" / "asoundrc").read_text()
        (home / ".asoundrc").write_text(
            template.replace("@HOME@", str(home)).replace("@MIC@", "voiced_mic")
        )
        # O_RDWR: never blocks, and PortAudio's probing opens/closes don't end the stream
        self._mic = os.open(home / "mic.fifo", os.O_RDWR)
        self._speaker = os.open(home / "speaker.fifo", os.O_RDONLY | os.O_NONBLOCK)
        self._said: queue.Queue[tuple[bytes, threading.Event]] = queue.Queue()
        self.heard = bytearray()  # what reached the loudspeaker
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._speak, daemon=True),
                         threading.Thread(target=self._listen, daemon=True)]  # fmt: skip
        for thread in self._threads:
            thread.start()

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a process that uses this card (the model cache kept)."""
        cache = os.environ.get("VOICED_CACHE_DIR") or str(Path.home() / ".cache/voiced/models")
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("VOICED_", "NOTIFY_"))}
        return {**keep, "HOME": str(self.home), "VOICED_CACHE_DIR": cache,
                "PYTHONUNBUFFERED": "1", **extra}  # fmt: skip

    def say(self, pcm16k: bytes) -> threading.Event:
        """Speak 16 kHz mono PCM into the microphone; the event is set once it is all out."""
        done = threading.Event()
        self._said.put((to_device_rate(pcm16k), done))
        return done

    def sound_seconds(self) -> float:
        """Seconds of sound (not silence) the loudspeaker got."""
        samples = np.frombuffer(bytes(self.heard[: len(self.heard) // 2 * 2]), "<i2")
        return int(np.count_nonzero(samples)) / DEVICE_RATE

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
        if any(thread.is_alive() for thread in self._threads):
            return  # a thread may still use an fd: closing it could hand its number to another file
        for fd in (self._mic, self._speaker):
            with contextlib.suppress(OSError):
                os.close(fd)

    def _speak(self) -> None:
        silence = b"\x00" * STEP
        pending, done, offset = b"", None, 0
        started, sent = time.monotonic(), 0.0
        while not self._stop.is_set():
            if not pending:
                try:
                    pending, done = self._said.get_nowait()
                    offset = 0
                except queue.Empty:
                    pass
            piece = pending[offset : offset + STEP] if pending else silence
            offset += STEP
            if pending and offset >= len(pending):
                pending = b""
                assert done is not None
                done.set()
            if not self._write_when_read(piece.ljust(STEP, b"\x00")):
                return
            sent += 0.02
            now = time.monotonic()
            if started + sent < now - 1.0:  # a reader came back after a pause: no catching up
                started, sent = now, 0.0
            time.sleep(max(0.0, started + sent - now))

    def _write_when_read(self, piece: bytes) -> bool:
        """Write once the microphone's reader has made room (False: the card was closed)."""
        while not self._stop.is_set():
            if select.select([], [self._mic], [], 0.1)[1]:
                os.write(self._mic, piece)
                return True
        return False

    def _listen(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(BlockingIOError):
                self.heard += os.read(self._speaker, 1 << 16)
            time.sleep(0.01)


class Screen:
    """A child process whose output (stdout and stderr together) is read as it comes."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.lines: list[str] = []
        self._cond = threading.Condition()
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, cwd=cwd, text=True, errors="replace",
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._cond:
                self.lines.append(line.rstrip("\n"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    @property
    def text(self) -> str:
        with self._cond:
            return "\n".join(self.lines)

    def wait_for(self, needle: str, timeout: float) -> str:
        """The first line holding ``needle``; AssertionError with the screen when it never comes."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = next((line for line in self.lines if needle in line), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or not self._reader.is_alive():
                    screen = "\n".join(self.lines[-80:])
                    raise AssertionError(f"{needle!r} not on the screen:\n{screen}")
                self._cond.wait(min(left, 0.2))

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise AssertionError(f"still running after {timeout} s:\n{self.text}") from None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
                print("--- killed: still running 30 s after SIGTERM; its last lines:")
                print("\n".join(self.lines[-120:]))


@pytest.fixture
def card(tmp_path: Path) -> Iterator[SoundCard]:
    """A sound card of its own in ``tmp_path / "home"`` (the HOME its processes get)."""
    home = tmp_path / "home"
    home.mkdir()
    sound = SoundCard(home)
    yield sound
    sound.close()
