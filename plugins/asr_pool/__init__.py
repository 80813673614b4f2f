"""The ASR worker pool on the user's MQTT broker (MQTT 5; one jobs topic per worker).

Front end: ``asr = ["mqtt-pool", "whisper-ctranslate2"]`` publishes each utterance for the
workers and falls back to the local engine when no worker answers. Workers: ``voiced worker``
(same config file; its ``pipeline.asr`` minus ``mqtt-pool`` are the worker's engines). Audio
crosses the broker only when the pool is configured, and only over an authenticated
connection (``allow_anonymous = true`` overrides; TLS recommended).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from voiced.api.hooks import hookimpl


def _factory(options: Any, app: Any) -> Any:
    from .frontend import MqttPoolAsr

    return MqttPoolAsr(options, app)


@hookimpl
def voiced_register_stages(register: Callable[..., None]) -> None:
    from .options import PoolOptions

    register(
        "asr",
        "mqtt-pool",
        _factory,
        options=PoolOptions,
        description="speech-to-text by a pool of `voiced worker` processes behind an MQTT 5 "
        "broker (the live worker with the fewest jobs); a local engine after it is the fallback",
    )


@hookimpl
def voiced_register_commands(add_command: Callable[..., Any]) -> None:
    from .worker import configure_parser, run_command

    add_command(
        "worker",
        "serve the ASR pool: transcribe utterances taken from the MQTT broker",
        configure_parser,
        run_command,
    )


@hookimpl
def voiced_doctor_checks(config: Any) -> list[Any]:
    from .doctor import pool_checks

    return pool_checks(config)
