"""``voiced doctor``: each configured remote Wyoming stage, whether it answers, how fast, with
which model."""

from __future__ import annotations

import time
from typing import Any

from voiced.api.config import stage_base_name, stage_value
from voiced.api.doctor import Check

from .peer import RemoteError, WyomingPeer

KINDS = ("asr", "tts", "wake", "intent")


def remote_checks(settings: Any) -> list[Check]:
    checks: list[Check] = []
    pipeline = getattr(settings, "pipeline", None)
    if pipeline is None:
        return checks
    for kind in KINDS:
        for name in getattr(pipeline, kind):
            if stage_base_name(name) != "wyoming":
                continue
            uri = stage_value(name) or settings.stage_options(kind, name).get("uri")
            checks.append(remote_check(kind, name, uri))
    return checks


def remote_check(kind: str, name: str, uri: str | None) -> Check:
    label = f"remote {kind} {name}"
    if not uri:
        return Check(
            label, False, "no uri", f'set [stages.{kind}."{name}"] uri = "tcp://HOST:PORT"'
        )
    try:
        peer = WyomingPeer(uri, connect_timeout=2.0, timeout=5.0)
    except ValueError as exc:
        return Check(label, False, str(exc), "use tcp://HOST:PORT")
    started = time.monotonic()
    try:
        info = peer.describe()
    except RemoteError as exc:
        return Check(
            label,
            None,
            f"{exc}; the next engine of the chain serves meanwhile",
            f"start the Wyoming service at {peer.address}, or check host/port and firewall",
        )
    finally:
        peer.close()
    ms = (time.monotonic() - started) * 1000
    offered = [*info.handle, *info.intent] if kind == "intent" else getattr(info, kind)
    programs = [p for p in offered if p.installed]
    if not programs:
        return Check(label, False, f"{peer.address} answers but offers no {kind}", "")
    items = programs[0].voices if kind == "tts" else programs[0].models
    names = [m.name for m in items if m.installed]
    models = ", ".join(names[:5]) or "no model listed"
    if len(names) > 5:
        models += f" and {len(names) - 5} more"
    return Check(
        label, True, f"{peer.address}: {programs[0].name} ({models}), describe {ms:.0f} ms"
    )
