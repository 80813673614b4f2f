"""Microphone and loudspeaker through PortAudio (``sounddevice``), and ``voiced devices``.

The capture callback runs on PortAudio's own thread: it only hands raw blocks to the event loop
(``call_soon_threadsafe`` into a bounded queue). A missing device, a missing PortAudio library or
a device that stops delivering audio is an ``error`` event and a retry with backoff, never a
crash: the daemon keeps running and picks the device up again when it comes back.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import threading
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from voiced.api.audio import AudioChunk, AudioFormat, StreamConverter
from voiced.api.events import error_event
from voiced.api.hooks import hookimpl

log = logging.getLogger(__name__)

CLOSE_TIMEOUT_S = 5.0  # how long a stream's abort and close may take before voiced moves on
_active_streams = 0  # PortAudio may only be re-initialized (device rescan) when this is 0
_streams_lock = threading.Lock()


def _count_stream(delta: int) -> None:
    global _active_streams
    with _streams_lock:
        _active_streams += delta


class DeviceError(RuntimeError):
    """The audio device is missing, failed, or stopped delivering audio."""


def portaudio() -> Any:
    """The sounddevice module; a clear DeviceError when PortAudio is not installed."""
    try:
        import sounddevice
    except OSError as exc:  # sounddevice raises OSError when libportaudio is missing
        raise DeviceError(
            f"PortAudio is not available ({exc}); install it, e.g. apt install libportaudio2"
        ) from None
    except ImportError:
        raise DeviceError("the sounddevice package is missing: pip install sounddevice") from None
    return sounddevice


def rescan(sd: Any) -> None:
    """Re-initialize PortAudio so devices plugged in since start-up are seen."""
    with _streams_lock:
        if _active_streams:
            return
        try:
            sd._terminate()
        finally:
            sd._initialize()


def find_device(sd: Any, device: str | int | None, kind: str) -> tuple[int, dict[str, Any]]:
    """A device by index, by (case-insensitive) name substring, or the default for ``kind``."""
    channels_key = "max_input_channels" if kind == "input" else "max_output_channels"
    devices = [dict(d, index=i) for i, d in enumerate(sd.query_devices())]
    usable = [d for d in devices if d[channels_key] > 0]
    if device is None or device == "":
        found = _default_device(sd, usable, kind)
    elif isinstance(device, int) or str(device).isdigit():
        found = [d for d in usable if d["index"] == int(device)]
    else:
        found = _devices_named(usable, str(device))
    if not found:
        names = ", ".join(f"{d['index']}: {d['name']}" for d in usable) or "none"
        raise DeviceError(
            f"no {kind} device matches {device!r} (available: {names}; see `voiced devices`)"
        )
    return found[0]["index"], found[0]


def _default_device(sd: Any, usable: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """The system's default ``kind`` device among ``usable`` ([] or one); raises when the
    system has no default."""
    default = sd.default.device[0 if kind == "input" else 1]
    if default is None or default < 0:
        names = ", ".join(d["name"] for d in usable) or "none"
        raise DeviceError(f"no default {kind} device (found {kind} devices: {names})")
    return [d for d in usable if d["index"] == default]


def _devices_named(usable: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The devices whose name is ``name`` (any case), else those whose name contains it."""
    found = [d for d in usable if name.lower() in d["name"].lower()]
    exact = [d for d in found if d["name"].lower() == name.lower()]
    return exact or found


class Backoff:
    def __init__(self, first: float, most: float) -> None:
        self.first, self.most, self.next = first, most, first

    def wait(self) -> float:
        seconds, self.next = self.next, min(self.most, self.next * 2)
        return seconds

    def reset(self) -> None:
        self.next = self.first


class SoundDeviceSourceOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    device: str | int | None = Field(
        None, description="input device: index or name substring; default: the system's"
    )
    samplerate: int | None = Field(None, ge=8000, le=384000, description="default: device's")
    channels: int = Field(1, ge=1, le=32, description="channels captured (mixed to mono)")
    block_ms: int = Field(20, ge=5, le=500)
    queue_blocks: int = Field(250, ge=2, description="blocks buffered before dropping")
    stall_seconds: float = Field(
        3.0, gt=0, description="no audio this long means the device is gone"
    )
    retry_seconds: float = Field(1.0, gt=0, description="first wait before reopening")
    retry_max_seconds: float = Field(30.0, gt=0)
    site_id: str | None = None


class SoundDeviceSource:
    """Captures from a sound card at its native rate; converts once to 16 kHz mono 16-bit."""

    finite = False

    def __init__(self, options: SoundDeviceSourceOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.site_id = options.site_id or (app.settings.site_id if app else "default")
        self.dropped_blocks = 0
        self.errors = 0
        self.opened = 0  # streams opened so far (a retry opens another)
        self._closing: StreamCloser | None = None

    def load(self) -> None:
        try:
            sd = portaudio()
            find_device(sd, self.options.device, "input")
        except DeviceError as exc:  # not fatal: chunks() keeps retrying
            log.warning("[%s] microphone not ready yet: %s", self.site_id, exc)

    def close(self) -> None:
        """The last stream stops before the daemon's loop and PortAudio go away."""
        if self._closing is not None:
            self._closing.join()

    async def chunks(self) -> AsyncIterator[AudioChunk]:
        backoff = Backoff(self.options.retry_seconds, self.options.retry_max_seconds)
        attempt = 0
        while True:
            try:
                async with contextlib.aclosing(self._capture(attempt > 0)) as capture:
                    async for chunk in capture:  # closed at once when the feed ends
                        backoff.reset()
                        yield chunk
                raise DeviceError("the input stream ended")
            except DeviceError as exc:
                attempt += 1
                wait = backoff.wait()
                self._error(f"{exc}; retrying in {wait:g} s", wait)
                await asyncio.sleep(wait)

    def _error(self, message: str, retry_in: float) -> None:
        self.errors += 1
        log.error("[%s] microphone: %s", self.site_id, message)
        if self.app is not None:
            self.app.emit(
                error_event(
                    "source",
                    message,
                    None,
                    self.site_id,
                    device=str(self.options.device),
                    retry_in=retry_in,
                )
            )

    async def _capture(self, rescan_first: bool) -> AsyncIterator[AudioChunk]:
        sd = portaudio()
        if self._closing is not None:
            await self._closing.wait()
        if rescan_first:
            await asyncio.to_thread(rescan, sd)
        index, info = find_device(sd, self.options.device, "input")
        rate = self.options.samplerate or int(info["default_samplerate"])
        channels = min(self.options.channels, int(info["max_input_channels"]))
        converter = StreamConverter(AudioFormat(rate, 2, channels))
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(self.options.queue_blocks)

        def put(block: bytes | None) -> None:
            try:
                queue.put_nowait(block)
            except asyncio.QueueFull:
                self.dropped_blocks += 1
                if self.dropped_blocks == 1 or self.dropped_blocks % 100 == 0:
                    log.warning(
                        "[%s] microphone: the loop is behind, %d blocks dropped",
                        self.site_id,
                        self.dropped_blocks,
                    )

        def hand_over(block: bytes | None) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the stream is closing
                loop.call_soon_threadsafe(put, block)

        def callback(indata: Any, frames: int, when: Any, status: Any) -> None:
            hand_over(bytes(indata))

        def finished() -> None:
            hand_over(None)

        try:
            stream = sd.RawInputStream(
                samplerate=rate,
                channels=channels,
                dtype="int16",
                device=index,
                blocksize=max(1, rate * self.options.block_ms // 1000),
                callback=callback,
                finished_callback=finished,
            )
            stream.start()
        except (sd.PortAudioError, ValueError) as exc:
            raise DeviceError(f"cannot open input {info['name']!r}: {exc}") from None
        _count_stream(+1)
        self.opened += 1
        log.info(
            "[%s] capturing from %r (%d Hz, %d ch)", self.site_id, info["name"], rate, channels
        )
        try:
            while True:
                try:
                    block = await asyncio.wait_for(queue.get(), self.options.stall_seconds)
                except TimeoutError:
                    raise DeviceError(
                        f"input {info['name']!r} delivered no audio for "
                        f"{self.options.stall_seconds:g} s (unplugged?)"
                    ) from None
                if block is None:
                    raise DeviceError(f"input {info['name']!r} stopped (unplugged?)")
                if pcm := converter.convert(block):
                    yield AudioChunk(pcm)
        finally:
            # In the background: the error event and the retry must not wait on a stuck device.
            self._closing = StreamCloser(stream)


class StreamCloser:
    """Aborts and closes a PortAudio stream on a thread of its own, started at once.

    A hung device must not hang the daemon: a device stuck inside a read can hold PortAudio's
    abort until the read returns, and then the stream is left behind (PortAudio is not rescanned
    while it is). ``wait`` bounds the loop's wait; ``join`` bounds the wait at shutdown, so no
    stream is still running when the event loop and PortAudio go away.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._close, name="voiced-audio-close", daemon=True)
        self.thread.start()

    def _close(self) -> None:
        try:
            self.stream.abort(ignore_errors=True)
            self.stream.close(ignore_errors=True)
        finally:
            _count_stream(-1)
            self.done.set()

    async def wait(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Wait (on the loop) until the stream is closed, at most ``timeout`` seconds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not self.done.is_set():
            if asyncio.get_running_loop().time() >= deadline:
                log.warning("closing the audio stream is taking long (device stuck?); moving on")
                return
            await asyncio.sleep(0.01)

    def join(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Wait (on a thread) until the stream is closed, at most ``timeout`` seconds."""
        if not self.done.wait(timeout):
            log.warning("the audio stream did not close in %g s (device stuck?)", timeout)


class SoundDeviceSinkOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    device: str | int | None = Field(
        None, description="output device: index or name substring; default: the system's"
    )
    samplerate: int | None = Field(None, ge=8000, le=384000, description="default: device's")
    buffer_ms: int = Field(200, ge=20, le=5000, description="audio queued ahead of the card")


class _Buffer:
    """Bytes shared between the loop (writer) and PortAudio's thread (reader)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.lock = threading.Lock()
        self.played = 0

    def push(self, pcm: bytes) -> None:
        with self.lock:
            self.data += pcm

    def pull(self, size: int) -> bytes:
        with self.lock:
            out = bytes(self.data[:size])
            del self.data[:size]
            self.played += len(out)
        return out + b"\x00" * (size - len(out))

    def __len__(self) -> int:
        return len(self.data)


class SoundDeviceSink:
    """Plays answers on a sound card at its own rate; cancelling the task stops it at once."""

    def __init__(self, options: SoundDeviceSinkOptions, app: Any = None) -> None:
        self.options = options
        self.app = app
        self.played_seconds = 0.0
        self._closing: StreamCloser | None = None

    def load(self) -> None:
        try:
            find_device(portaudio(), self.options.device, "output")
        except DeviceError as exc:  # not fatal: each answer tries again
            log.warning("speaker not ready yet: %s", exc)

    def close(self) -> None:
        """An answer's stream stops before the daemon's loop and PortAudio go away."""
        if self._closing is not None:
            self._closing.join()

    async def play(self, audio: AsyncIterator[AudioChunk], run_id: str, site_id: str) -> None:
        sd = portaudio()
        index, info = find_device(sd, self.options.device, "output")
        rate = self.options.samplerate or int(info["default_samplerate"])
        target = AudioFormat(rate, 2, 1)
        buffer = _Buffer()
        done = threading.Event()
        ahead = target.bytes_per_second * self.options.buffer_ms // 1000

        def callback(outdata: Any, frames: int, when: Any, status: Any) -> None:
            outdata[:] = buffer.pull(len(outdata))

        def open_stream() -> Any:
            try:
                stream = sd.RawOutputStream(
                    samplerate=rate,
                    channels=1,
                    dtype="int16",
                    device=index,
                    callback=callback,
                    finished_callback=done.set,
                )
                stream.start()
            except (sd.PortAudioError, ValueError) as exc:
                raise DeviceError(f"cannot open output {info['name']!r}: {exc}") from None
            _count_stream(+1)
            return stream

        stream: Any = None
        converter: StreamConverter | None = None
        try:
            async for chunk in audio:
                converter = converter or StreamConverter(chunk.format, target)
                buffer.push(converter.convert(chunk.audio))
                stream = stream or open_stream()  # opened with audio queued: no click, no gap
                while len(buffer) > ahead:  # keep only a little queued: barge-in stops quickly
                    await _wait_for_device(stream, done, info)
            if converter is not None:
                buffer.push(converter.convert(b"", last=True))
            while stream is not None and len(buffer):
                await _wait_for_device(stream, done, info)
            if stream is not None:
                await asyncio.sleep(stream.latency)  # what the card holds still has to sound
        finally:
            buffer.data.clear()
            self.played_seconds += buffer.played / target.bytes_per_second
            if stream is not None:
                self._closing = StreamCloser(stream)
                await self._closing.wait()


async def _wait_for_device(stream: Any, done: threading.Event, info: dict[str, Any]) -> None:
    if done.is_set() or not stream.active:
        raise DeviceError(f"output {info['name']!r} stopped (unplugged?)")
    await asyncio.sleep(0.01)


# -- voiced devices ----------------------------------------------------------------------------


def list_devices() -> list[dict[str, Any]]:
    sd = portaudio()
    default_in, default_out = sd.default.device
    rows = []
    for index, device in enumerate(sd.query_devices()):
        rows.append(
            {
                "index": index,
                "name": device["name"],
                "hostapi": sd.query_hostapis(device["hostapi"])["name"],
                "inputs": device["max_input_channels"],
                "outputs": device["max_output_channels"],
                "rate": int(device["default_samplerate"]),
                "default_input": index == default_in,
                "default_output": index == default_out,
            }
        )
    return rows


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _run(args: argparse.Namespace) -> int:
    import json

    try:
        rows = list_devices()
    except DeviceError as exc:
        print(f"error: {exc}")
        return 1
    if getattr(args, "json", False):
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("no audio devices found (is the user in the 'audio' group? is a sound server up?)")
        return 1
    print(f"{'':2} {'#':>3}  {'name':<40} {'in':>3} {'out':>3} {'rate':>6}  host api")
    for row in rows:
        mark = ("<" if row["default_input"] else " ") + (">" if row["default_output"] else " ")
        print(
            f"{mark} {row['index']:>3}  {row['name'][:40]:<40} {row['inputs']:>3} "
            f"{row['outputs']:>3} {row['rate']:>6}  {row['hostapi']}"
        )
    print(
        "\n< default input   > default output.  Pick one in config/voiced.toml:\n"
        '  [stages.source.sounddevice]\n  device = "USB"   # index or part of the name'
    )
    return 0


@hookimpl
def voiced_register_commands(add_command: Any) -> None:
    add_command(
        "devices", "list audio input/output devices (for the sounddevice stages)", _configure, _run
    )


@hookimpl
def voiced_register_stages(register: Any) -> None:
    register(
        "source",
        "sounddevice",
        SoundDeviceSource,
        options=SoundDeviceSourceOptions,
        shorthand="device",
        description="a microphone (PortAudio), any rate, converted once",
    )
    register(
        "sink",
        "sounddevice",
        SoundDeviceSink,
        options=SoundDeviceSinkOptions,
        shorthand="device",
        description="a loudspeaker (PortAudio); barge-in stops it at once",
    )
