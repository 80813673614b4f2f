"""``voiced doctor``: the pool's broker login and the workers online, with engine and model."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from voiced.api.config import stage_base_name
from voiced.api.doctor import Check

from .options import PoolConfigError, PoolOptions
from .wire import Topics


def pool_checks(settings: Any) -> list[Check]:
    pipeline = getattr(settings, "pipeline", None)
    if pipeline is None or not any(stage_base_name(n) == "mqtt-pool" for n in pipeline.asr):
        return []
    try:
        options = PoolOptions.model_validate(settings.stage_options("asr", "mqtt-pool"))
        broker = options.broker_options(settings)
    except (PoolConfigError, ValueError) as exc:
        return [Check("ASR pool", False, str(exc), "see docs/scaleout.md", section="mqtt")]
    workers, online = workers_online(options, broker)
    return [workers, *parallel_check(online, pipeline.asr_workers)]


def parallel_check(online: int, asr_workers: int) -> list[Check]:
    """Whether ``pipeline.asr_workers`` lets every online worker have a job at once."""
    if online <= asr_workers:
        return []
    return [
        Check(
            "ASR pool parallelism",
            None,
            f"{online} workers online but pipeline.asr_workers = {asr_workers}: at most "
            f"{asr_workers} utterance(s) in flight, the other workers idle",
            f"set asr_workers = {online} in [pipeline] (docs/scaleout.md)",
            section="mqtt",
        )
    ]


def workers_check(options: PoolOptions, broker: Any, wait: float = 1.5) -> Check:
    """Subscribe to the workers' retained statuses for a moment and list who is online."""
    return workers_online(options, broker, wait)[0]


def workers_online(options: PoolOptions, broker: Any, wait: float = 1.5) -> tuple[Check, int]:
    """The workers' check and how many are online."""
    from voiced_plugins.mqtt.client import MqttClient

    topics = Topics(options.prefix, options.group)
    seen: dict[str, dict[str, Any]] = {}
    connected = threading.Event()
    lock = threading.Lock()

    def on_message(topic: str, payload: bytes) -> None:
        try:
            status = json.loads(payload)
        except ValueError:
            return
        with lock:
            seen[topic.rsplit("/", 1)[-1]] = status

    client = MqttClient(
        broker.model_copy(update={"client_id": None}),
        on_connect=connected.set,
        on_message=on_message,
    )
    client.subscribe(topics.workers, 1)
    started = time.monotonic()
    client.start()
    try:
        if not connected.wait(5.0):
            return Check(
                "ASR pool broker",
                False,
                client.last_error or f"no answer from {client.broker}",
                "start the broker, or fix [stages.asr.mqtt-pool.broker]",
                section="mqtt",
            ), 0
        connect_ms = (time.monotonic() - started) * 1000
        time.sleep(wait)
    finally:
        client.stop()
    online = {w: s for w, s in seen.items() if s.get("online")}
    if not online:
        return Check(
            "ASR pool workers",
            None,
            f"{client.broker} ({connect_ms:.0f} ms): no worker of group {options.group!r} online; "
            "the local engine serves",
            "start `voiced worker` on the machines that should transcribe",
            section="mqtt",
        ), 0
    listed = "; ".join(
        f"{w}: {s.get('engine', '?')} {s.get('model', '')} on {s.get('host', '?')}".strip()
        for w, s in sorted(online.items())
    )
    detail = f"{client.broker} ({connect_ms:.0f} ms): {len(online)} online: {listed}"
    return Check("ASR pool workers", True, detail, section="mqtt"), len(online)
