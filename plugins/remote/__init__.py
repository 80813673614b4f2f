"""Remote stages over Wyoming: ASR, TTS, wake and intent served by another machine.

``asr = ["wyoming", "whisper-ctranslate2"]`` with ``[stages.asr.wyoming] uri =
"tcp://gpu-box:10300"`` (or ``voiced run --asr wyoming:gpu-box:10300 --asr
whisper-ctranslate2``) sends each utterance to the remote service and falls back to the local
engine, with an ``engine-fallback`` event naming the reason, when the remote is down or slow.
Several remotes: ``asr = ["wyoming#gpu", "wyoming#nas", "whisper-ctranslate2"]`` with one
``[stages.asr."wyoming#gpu"]`` block each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voiced.api.hooks import hookimpl

from .doctor import remote_checks


def _asr_factory(options: Any, app: Any) -> Any:
    from .asr import RemoteWyomingAsr

    return RemoteWyomingAsr(options, app)


def _tts_factory(options: Any, app: Any) -> Any:
    from .tts import RemoteWyomingTts

    return RemoteWyomingTts(options, app)


def _intent_factory(options: Any, app: Any) -> Any:
    from .intent import RemoteWyomingIntent

    return RemoteWyomingIntent(options, app)


def _wake_factory(options: Any, app: Any) -> Any:
    from .wake import RemoteWyomingWake

    return RemoteWyomingWake(options, app)


@hookimpl
def voiced_register_stages(register: Callable[..., None]) -> None:
    from .asr import RemoteAsrOptions
    from .intent import RemoteIntentOptions
    from .tts import RemoteTtsOptions
    from .wake import RemoteWakeOptions

    register(
        "asr",
        "wyoming",
        _asr_factory,
        options=RemoteAsrOptions,
        description="speech-to-text on a remote Wyoming service (another voiced, "
        "wyoming-faster-whisper); put a local engine after it as the fallback",
        shorthand="uri",
    )
    register(
        "tts",
        "wyoming",
        _tts_factory,
        options=RemoteTtsOptions,
        description="text-to-speech on a remote Wyoming service (another voiced, wyoming-piper)",
        shorthand="uri",
    )
    register(
        "wake",
        "wyoming",
        _wake_factory,
        options=RemoteWakeOptions,
        description="wake word detection streamed to a remote Wyoming service (another voiced)",
        shorthand="uri",
    )
    register(
        "intent",
        "wyoming",
        _intent_factory,
        options=RemoteIntentOptions,
        description="intents from a remote Wyoming intent/handle service (another voiced); "
        "it may act itself and say what to answer",
        shorthand="uri",
    )


@hookimpl
def voiced_doctor_checks(config: Any) -> list[Any]:
    return remote_checks(config)
