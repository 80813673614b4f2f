"""A small Assistant for the Wyoming plugin's protocol tests: real runs, scripted engines.

It implements ``voiced.context.Assistant`` as the daemon does, with the core's own ``Run``
(events, stage timeout, end reasons) and ``EngineChain``; only the engines behind the chains are
scripted, so a test sees exactly what the plugin asked of the daemon. test_wyoming.py runs the
same plugin against the real daemon with real models.
"""

from __future__ import annotations

import asyncio
import functools
import math
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from voiced.audio import AudioChunk, AudioFormat
from voiced.chain import EngineChain
from voiced.config import load_settings
from voiced.context import RunContext
from voiced.events import Event
from voiced.intents import Intent, Response, Transcript
from voiced.run import Phase, Run, StageTimeout

EMPTY = Path(__file__).parent / "empty.toml"
VOICE = AudioFormat(22050, 2, 1)


class ScriptedAsr:
    """Answers every utterance with ``text``; keeps the PCM it was given."""

    name, device = "scripted-asr", "cpu"

    def __init__(self, text: str, hang: float = 0.0) -> None:
        self.text, self.hang = text, hang
        self.heard: list[bytes] = []
        self.released = threading.Event()

    def load(self) -> None: ...
    def close(self) -> None: ...

    def transcribe(self, audio: bytes, language: str | None = None) -> Transcript:
        self.heard.append(audio)
        if self.hang:
            self.released.wait(self.hang)
        return Transcript(self.text, language=language or "en", engine=self.name)


class ToneTts:
    """A 440 Hz tone, 0.1 s per word, at the voice format."""

    name, device, format = "tone", "cpu", VOICE

    def load(self) -> None: ...
    def close(self) -> None: ...

    def synthesize(self, text: str) -> AudioChunk:
        frames = int(VOICE.rate * 0.1 * len(text.split()))
        samples = (int(8000 * math.sin(2 * math.pi * 440 * i / VOICE.rate)) for i in range(frames))
        return AudioChunk(struct.pack(f"<{frames}h", *samples), VOICE)


class SmallAssistant:
    """The daemon as the Wyoming plugin sees it (voiced.context.Assistant)."""

    def __init__(
        self,
        asr: ScriptedAsr,
        intents: dict[str, Intent] | None = None,
        handles: dict[str, str] | None = None,
        stage_timeout: float = 5.0,
    ) -> None:
        self.settings = load_settings(EMPTY, pipeline={"stage_timeout": stage_timeout})
        self.accepting = True
        self.events: list[Event] = []
        self.calls: list[tuple[Any, ...]] = []
        self.fed: dict[str, list[AudioChunk]] = {}
        self.intents = intents or {}
        self.handles = handles or {}  # intent name -> what the handler says
        self.executor = ThreadPoolExecutor(4, thread_name_prefix="small-assistant")
        self.asr = EngineChain("asr", [("scripted", asr)], self.emit)
        self.tts = EngineChain("tts", [("tone", ToneTts())], self.emit)
        self.asr.load()
        self.tts.load()
        self._feeds: dict[str, asyncio.Task[None]] = {}

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)

    # -- what the test reads ---------------------------------------------------------------

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.type == kind]

    def run_of(self, run_id: str | None) -> list[str]:
        return [str(e.type) for e in self.events if e.run_id == run_id]

    # -- Assistant -------------------------------------------------------------------------

    def emit(self, event: Event) -> None:
        self.events.append(event)

    async def say(self, text: str, site_id: str | None = None) -> None:
        self.calls.append(("say", text, site_id))

    async def listen(self, site_id: str | None = None) -> None:
        self.calls.append(("listen", site_id))

    def set_muted(self, muted: bool, site_id: str | None = None) -> None:
        self.calls.append(("mute", muted, site_id))

    def cancel(self, site_id: str | None = None) -> None:
        self.calls.append(("cancel", site_id))

    def start_run(
        self, site_id: str, reason: str, *, phase: Phase = Phase.LISTENING, via: str | None = None
    ) -> Run:
        return Run(self, site_id, phase=phase, via=via).start(reason)

    async def transcribe(self, run: Run, audio: bytes, language: str | None = None) -> Transcript:
        return await run.transcribe(audio, language)

    def voice_format(self) -> AudioFormat:
        return VOICE

    def engines(self, kind: str) -> list[tuple[str, Any]]:
        return list({"asr": self.asr, "tts": self.tts}[kind].loaded)

    async def attach_site(self, source: Any, sinks: list[Any] | None = None) -> None:
        self.calls.append(("attach", source.site_id))
        self.fed[source.site_id] = chunks = []

        async def feed() -> None:
            async for chunk in source.chunks():
                chunks.append(chunk)

        self._feeds[source.site_id] = asyncio.create_task(feed())

    async def detach_site(self, site_id: str, timeout: float = 10.0) -> None:
        self.calls.append(("detach", site_id))
        task = self._feeds.pop(site_id, None)
        if task is not None:
            await asyncio.wait_for(task, timeout)

    def stage(self, kind: str, name: str | None = None) -> Any:
        return None

    def make_stage(self, kind: str, name: str) -> Any:
        raise LookupError(f"no {kind} stage {name!r} here")

    async def in_thread(
        self, fn: Any, *args: Any, timeout: float | None = None, stage: str = ""
    ) -> Any:
        future = asyncio.get_running_loop().run_in_executor(
            self.executor, functools.partial(fn, *args)
        )
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            raise StageTimeout(f"{stage or 'stage'} timed out after {timeout:g} s") from None

    def call_threadsafe(self, coro: Any) -> None:
        raise NotImplementedError

    # -- the run's hooks (RunServices) -----------------------------------------------------

    def recognize_hook(self, transcript: Transcript, context: RunContext) -> Intent | None:
        return self.intents.get(transcript.text)

    def handle_hook(self, intent: Intent, context: RunContext) -> Response | None:
        speech = self.handles.get(intent.name)
        return Response(speech, handler="scripted") if speech is not None else None
