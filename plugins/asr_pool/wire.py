"""What goes over the broker: topics, jobs (a JSON header line, then the PCM) and replies."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Topics:
    prefix: str
    group: str

    @property
    def jobs(self) -> str:
        return f"{self.prefix}/jobs"

    @property
    def shared_jobs(self) -> str:
        """What workers subscribe to: the broker hands each job to one of them."""
        return f"$share/{self.group}/{self.jobs}"

    def reply(self, front_id: str) -> str:
        return f"{self.prefix}/reply/{front_id}"

    def worker(self, worker_id: str) -> str:
        return f"{self.prefix}/workers/{worker_id}"

    @property
    def workers(self) -> str:
        return f"{self.prefix}/workers/+"


def job_id(run_id: str | None, audio: bytes, language: str | None) -> str:
    """``<run id>-<digest of the audio>``: the same utterance of the same run is one job, so a
    redelivery (or a second ask) is answered once; outside a run, a fresh id."""
    if not run_id:
        return uuid.uuid4().hex
    digest = hashlib.blake2b(audio, digest_size=6, person=b"voiced-asr")
    digest.update((language or "").encode())
    return f"{run_id}-{digest.hexdigest()}"


@dataclass(frozen=True)
class Job:
    """One utterance: 16 kHz mono 16-bit PCM, who wants the answer, and until when."""

    id: str
    reply: str
    deadline: float  # epoch seconds: a worker drops a job it gets later
    audio: bytes
    language: str | None = None
    rate: int = 16000
    run_id: str | None = None

    def encode(self) -> bytes:
        header = {k: v for k, v in asdict(self).items() if k != "audio"}
        return json.dumps(header).encode() + b"\n" + self.audio

    @classmethod
    def decode(cls, payload: bytes) -> Job:
        head, sep, audio = payload.partition(b"\n")
        if not sep:
            raise ValueError("job without a header line")
        header = json.loads(head)
        return cls(
            audio=audio,
            **{k: header[k] for k in ("id", "reply", "deadline")},
            language=header.get("language"),
            rate=int(header.get("rate", 16000)),
            run_id=header.get("run_id"),
        )


@dataclass(frozen=True)
class Reply:
    """``claim`` (a worker started on it), ``result`` (the text) or ``error``."""

    id: str
    type: str
    worker: str
    text: str = ""
    language: str | None = None
    engine: str = ""
    asr_s: float = 0.0
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def encode(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def decode(cls, payload: bytes) -> Reply:
        return cls(**json.loads(payload))


def worker_status(worker_id: str, online: bool, **info: Any) -> bytes:
    return json.dumps({"worker": worker_id, "online": online, **info}).encode()
