"""The sounddevice source and sink on ALSA file/null devices: no sound card needed.

PortAudio reads the ALSA configuration once, when it starts, so every scenario runs in a
subprocess whose HOME holds a test ``.asoundrc`` (tests/asound/). The microphone is an ALSA
``file`` plugin reading a FIFO that this process feeds (so the test sets the pace, and can stop
feeding to pull the plug); the loudspeaker is a ``file`` plugin writing raw PCM. This module is
also the subprocess's entry point: ``python test_sounddevice.py SCENARIO HOME``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

TESTS = Path(__file__).parent
DEVICE_RATE = 44100  # what PortAudio reports for ALSA plugin devices; the file holds raw PCM
FRAME = 4  # 16-bit stereo on the microphone side


def asoundrc(home: Path, mic: str = "voiced_mic") -> None:
    template = (TESTS / "asound" / "asoundrc").read_text()
    text = template.replace("@HOME@", str(home)).replace("@MIC@", mic)
    (home / ".asoundrc").write_text(text)


def run_scenario(name: str, home: Path, timeout: float = 90) -> dict[str, Any]:
    env = dict(os.environ, HOME=str(home), PYTHONPATH=str(TESTS))
    done = subprocess.run(
        [sys.executable, __file__, name, str(home)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(lines[-1])


@pytest.fixture
def home(tmp_path: Path) -> Path:
    os.mkfifo(tmp_path / "mic.fifo")
    os.mkfifo(tmp_path / "speaker.fifo")
    asoundrc(tmp_path)
    return tmp_path


@pytest.mark.slow
def test_the_source_captures_at_the_device_rate_and_hands_on_16khz_mono_with_the_wake_word(home):
    result = run_scenario("capture", home)
    assert result["rate"] == DEVICE_RATE and result["channels"] == 2
    assert result["formats"] == ["16000 Hz, 16-bit, 1 ch"]
    assert abs(result["tone_hz"] - 440) < 5  # converted once, at the right rate
    assert result["wake"] == "hey_jarvis"
    assert result["errors"] == []


@pytest.mark.slow
def test_a_device_that_stops_delivering_is_an_error_event_then_capture_resumes(home):
    result = run_scenario("unplug", home)
    assert len(result["errors"]) >= 1
    assert "no audio" in result["errors"][0]["message"]
    assert result["errors"][0]["stage"] == "source"
    assert result["opened"] >= 2
    assert result["seconds_after_error"] > 0.5


@pytest.mark.slow
def test_a_missing_device_is_retried_until_it_appears(home):
    asoundrc(home, mic="not_there_yet")
    result = run_scenario("hotplug", home)
    assert "no input device matches 'voiced_mic'" in result["errors"][0]["message"]
    assert result["seconds"] > 0.5  # audio flowed once the device was configured


@pytest.mark.slow
def test_the_sink_plays_at_the_device_rate(home):
    result = run_scenario("play", home)
    assert result["raised"] is None
    assert abs(result["seconds"] - 1.0) < 0.1
    assert abs(result["tone_hz"] - 440) < 5


@pytest.mark.slow
def test_cancelling_playback_stops_the_sink_at_once(home):
    result = run_scenario("interrupt", home)
    assert result["raised"] == "CancelledError"
    assert result["heard_seconds"] < 3.0  # of a 10 s answer
    assert result["played_seconds"] < 3.0


@pytest.mark.slow
def test_a_spoken_command_gets_a_spoken_answer_and_a_stop_frees_microphone_and_speaker(home):
    result = run_scenario("conversation", home, timeout=150)
    assert result["wake"] == ["hey_jarvis"]
    assert result["intents"] == ["HassGetCurrentTime"]
    assert result["run_end"] == ["done"]
    assert result["answer_seconds"] > 0.5  # the answer came out of the "loudspeaker"
    assert result["errors"] == []
    assert result["streams_open_after_stop"] == 0  # stopped: no callback into a closed loop


def test_voiced_devices_lists_inputs_and_outputs_and_marks_the_defaults(home):
    result = run_scenario("devices", home)
    names = {row["name"]: row for row in result["rows"]}
    assert {"voiced_mic", "voiced_speaker", "default"} <= set(names)
    assert names["default"]["default_input"] and names["default"]["default_output"]
    assert "<>" in result["table"] and "voiced_mic" in result["table"]


# -- the subprocess side ------------------------------------------------------------------------


def tone(seconds: float, rate: int, channels: int = 1, hz: float = 440.0) -> bytes:
    t = np.arange(int(seconds * rate)) / rate
    wave = (0.3 * np.sin(2 * np.pi * hz * t) * 32767).astype("<i2")
    return np.repeat(wave[:, None], channels, axis=1).tobytes()


def dominant_hz(pcm: bytes, rate: int) -> float:
    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return float(np.fft.rfftfreq(len(samples), 1 / rate)[int(np.argmax(spectrum))])


class Microphone:
    """Feeds the FIFO behind the ALSA ``file`` capture device, at a pace the test chooses."""

    def __init__(self, home: Path) -> None:
        # O_RDWR: never blocks, and PortAudio's probing opens/closes don't end the stream.
        self.fd = os.open(home / "mic.fifo", os.O_RDWR)
        self.paused = threading.Event()
        self.stopped = threading.Event()
        self.audio = b""

    def play(self, pcm: bytes, speed: float = 4.0) -> threading.Thread:
        def feed() -> None:
            step = DEVICE_RATE * FRAME // 50
            started, sent = time.monotonic(), 0.0
            offset = 0
            while not self.stopped.is_set():
                if self.paused.is_set():
                    time.sleep(0.01)
                    continue
                piece = pcm[offset : offset + step] or b"\x00" * step
                offset += step
                os.write(self.fd, piece)
                sent += 0.02 / speed
                time.sleep(max(0.0, started + sent - time.monotonic()))

        thread = threading.Thread(target=feed, daemon=True)
        thread.start()
        return thread


class Speaker:
    """Reads the FIFO behind the ALSA ``file`` playback device at playback speed."""

    def __init__(self, home: Path, speed: float = 1.0) -> None:
        self.fd = os.open(home / "speaker.fifo", os.O_RDONLY | os.O_NONBLOCK)
        self.heard = bytearray()
        self.stopped = threading.Event()
        step = DEVICE_RATE * 2 // 50

        def listen() -> None:
            started, taken = time.monotonic(), 0.0
            while not self.stopped.is_set():
                with contextlib.suppress(BlockingIOError):
                    self.heard += os.read(self.fd, step)
                taken += 0.02 / speed
                time.sleep(max(0.0, started + taken - time.monotonic()))

        threading.Thread(target=listen, daemon=True).start()


def sound_card(home: Path, speaker_speed: float = 1.0) -> tuple[Microphone, Speaker]:
    """Both ends of the test card; they must be open before PortAudio starts (it probes them)."""
    return Microphone(home), Speaker(home, speaker_speed)


class Recorder:
    """The app as a source sees it: it only needs ``emit``."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def emit(self, event: Any) -> None:
        self.events.append(event)

    def errors(self) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.type == "error"]


async def scenario_capture(home: Path) -> dict[str, Any]:
    from speech import piper, silence
    from voiced_plugins.io_sounddevice import (
        SoundDeviceSource,
        SoundDeviceSourceOptions,
        find_device,
        portaudio,
    )
    from voiced_plugins.wake_openwakeword import OpenWakeWord, OpenWakeWordOptions

    from voiced.audio import AudioFormat, StreamConverter

    speech = silence(0.5) + piper("hey jarvis") + silence(1.0)
    up = StreamConverter(AudioFormat(16000, 2, 1), AudioFormat(DEVICE_RATE, 2, 1))
    speech_44k = up.convert(speech, last=True)
    stereo = np.repeat(np.frombuffer(speech_44k, "<i2")[:, None], 2, axis=1).tobytes()
    mic, _ = sound_card(home)
    mic.play(tone(1.0, DEVICE_RATE, 2) + stereo, speed=4.0)
    app = Recorder()
    source = SoundDeviceSource(
        SoundDeviceSourceOptions(device="voiced_mic", channels=2, site_id="t"), app
    )
    _, info = find_device(portaudio(), "voiced_mic", "input")
    wake = OpenWakeWord(OpenWakeWordOptions(models=["hey_jarvis"]))
    wake.load()
    pcm, formats, detected = b"", set(), None
    chunks = source.chunks()
    async for chunk in chunks:
        formats.add(str(chunk.format))
        pcm += chunk.audio
        detected = detected or wake.process(chunk)
        if detected or len(pcm) > 32000 * 6:
            break
    await chunks.aclose()
    mic.stopped.set()
    return {
        "rate": int(info["default_samplerate"]),
        "channels": 2,
        "formats": sorted(formats),
        "tone_hz": dominant_hz(pcm[3200:28800], 16000),
        "wake": detected.name if detected else None,
        "errors": app.errors(),
    }


async def scenario_unplug(home: Path) -> dict[str, Any]:
    from voiced_plugins.io_sounddevice import SoundDeviceSource, SoundDeviceSourceOptions

    mic, _ = sound_card(home)
    mic.play(tone(30.0, DEVICE_RATE, 2), speed=2.0)
    app = Recorder()
    options = SoundDeviceSourceOptions(
        device="voiced_mic", stall_seconds=0.5, retry_seconds=0.2, site_id="t"
    )
    source = SoundDeviceSource(options, app)
    heard = after = 0.0

    async def plug_back_in_after_the_error() -> None:
        while not app.errors():
            await asyncio.sleep(0.05)
        mic.paused.clear()

    replugging = asyncio.create_task(plug_back_in_after_the_error())
    chunks = source.chunks()
    async for chunk in chunks:
        heard += chunk.seconds
        if app.errors():
            after += chunk.seconds
            if after > 1.0:
                break
        elif heard > 1.0:
            mic.paused.set()  # the device goes quiet: no more callbacks
    await chunks.aclose()
    await replugging
    mic.stopped.set()
    return {"errors": app.errors(), "opened": source.opened, "seconds_after_error": after}


async def scenario_hotplug(home: Path) -> dict[str, Any]:
    from voiced_plugins.io_sounddevice import SoundDeviceSource, SoundDeviceSourceOptions

    mic, _ = sound_card(home)
    mic.play(tone(30.0, DEVICE_RATE, 2), speed=2.0)
    app = Recorder()
    options = SoundDeviceSourceOptions(device="voiced_mic", retry_seconds=0.2, site_id="t")
    source = SoundDeviceSource(options, app)
    source.load()  # not fatal: only a warning
    seconds = 0.0
    chunks = source.chunks()

    async def plug_in_when_missed() -> None:
        while not app.errors():
            await asyncio.sleep(0.05)
        asoundrc(home)  # the device appears
        later = time.time() + 5  # alsa-lib notices a changed config by its mtime (whole seconds)
        os.utime(home / ".asoundrc", (later, later))

    plugging = asyncio.create_task(plug_in_when_missed())
    async for chunk in chunks:
        seconds += chunk.seconds
        if seconds > 1.0:
            break
    await chunks.aclose()
    await plugging
    mic.stopped.set()
    return {"errors": app.errors(), "seconds": seconds}


async def _play(sink: Any, pcm: bytes, rate: int) -> None:
    from voiced.audio import AudioChunk, AudioFormat

    async def stream():
        step = rate * 2 // 10
        for offset in range(0, len(pcm), step):
            yield AudioChunk(pcm[offset : offset + step], AudioFormat(rate, 2, 1))

    await sink.play(stream(), "run", "t")


async def scenario_play(home: Path) -> dict[str, Any]:
    from voiced_plugins.io_sounddevice import SoundDeviceSink, SoundDeviceSinkOptions

    _, speaker = sound_card(home, speaker_speed=2.0)
    sink = SoundDeviceSink(SoundDeviceSinkOptions(device="voiced_speaker"))
    raised = None
    try:
        await _play(sink, tone(1.0, 22050), 22050)
    except Exception as exc:
        raised = repr(exc)
    await asyncio.sleep(0.3)
    # The null device has no clock: it takes audio as fast as it comes until the FIFO is full,
    # with silence where the sink had nothing queued yet. Count the sound, not the silence.
    samples = np.frombuffer(bytes(speaker.heard), "<i2")
    out = samples[samples != 0].tobytes()
    return {
        "raised": raised,
        "seconds": len(out) / (DEVICE_RATE * 2),
        "tone_hz": dominant_hz(out[:DEVICE_RATE], DEVICE_RATE),
    }


async def scenario_interrupt(home: Path) -> dict[str, Any]:
    from voiced_plugins.io_sounddevice import SoundDeviceSink, SoundDeviceSinkOptions

    _, speaker = sound_card(home)
    sink = SoundDeviceSink(SoundDeviceSinkOptions(device="voiced_speaker"))
    task = asyncio.create_task(_play(sink, tone(10.0, 22050), 22050))
    await asyncio.sleep(1.0)
    task.cancel()
    raised = None
    try:
        await task
    except asyncio.CancelledError:
        raised = "CancelledError"
    await asyncio.sleep(0.5)
    return {
        "raised": raised,
        "heard_seconds": len(speaker.heard) / (DEVICE_RATE * 2),
        "played_seconds": sink.played_seconds,
    }


async def scenario_conversation(home: Path) -> dict[str, Any]:
    from pipeline_helpers import EventRecorder, overrides
    from speech import piper, silence
    from voiced_plugins import io_sounddevice

    from voiced.audio import AudioFormat, StreamConverter
    from voiced.daemon import prepare
    from voiced.pipeline import Pipeline

    mic, speaker = sound_card(home)
    speech = silence(0.5) + piper("hey jarvis") + silence(0.3) + piper("what time is it")
    up = StreamConverter(AudioFormat(16000, 2, 1), AudioFormat(DEVICE_RATE, 2, 1))
    mono = np.frombuffer(up.convert(speech + silence(3.0), last=True), "<i2")
    recorder = EventRecorder()
    settings, host = prepare(
        TESTS / "empty.toml",
        overrides(
            pipeline={"source": ["sounddevice"], "wake": ["openwakeword"], "sink": ["sounddevice"]},
            stages={
                "source": {"sounddevice": {"device": "voiced_mic", "channels": 2}},
                "wake": {"openwakeword": {"models": ["hey_jarvis"]}},
                "sink": {"sounddevice": {"device": "voiced_speaker"}},
            },
        ),
        [("recorder", recorder)],
    )
    pipeline = Pipeline(settings, host)
    await pipeline.start()
    stop = asyncio.Event()

    async def until_answered() -> None:
        mic.play(np.repeat(mono[:, None], 2, axis=1).tobytes(), speed=1.0)
        while not recorder.of("run-end"):
            await asyncio.sleep(0.1)
        stop.set()

    watcher = asyncio.create_task(until_answered())
    try:
        await asyncio.wait_for(pipeline.run(stop), 90)
    finally:
        watcher.cancel()
        await pipeline.stop()
        streams_open = io_sounddevice._active_streams  # before the loop and PortAudio go away
        mic.stopped.set()
    samples = np.frombuffer(bytes(speaker.heard), "<i2")
    return {
        "streams_open_after_stop": streams_open,
        "wake": [e.data["name"] for e in recorder.of("wake")],
        "intents": [e.data["name"] for e in recorder.of("intent")],
        "run_end": [e.data["reason"] for e in recorder.of("run-end")],
        "answer_seconds": int(np.count_nonzero(samples)) / DEVICE_RATE,
        "errors": [e.data for e in recorder.of("error")],
    }


async def scenario_devices(home: Path) -> dict[str, Any]:
    import argparse
    import contextlib
    import io

    from voiced_plugins.io_sounddevice import _run, list_devices

    sound_card(home)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        _run(argparse.Namespace(json=False))
    return {"rows": list_devices(), "table": out.getvalue()}


if __name__ == "__main__":
    scenario, home_dir = sys.argv[1], Path(sys.argv[2])
    result = asyncio.run(asyncio.wait_for(globals()[f"scenario_{scenario}"](home_dir), 120))
    print(json.dumps(result, default=str))
    sys.stdout.flush()
    os._exit(0)  # PortAudio threads left behind by a hung device must not keep us alive
