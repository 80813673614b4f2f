"""What goes over the broker: topics, jobs (a JSON header line, then the PCM) and replies,
each checked against its schema (types, sizes, the audio length cap) before it is used."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
import zlib
from dataclasses import asdict, dataclass, field
from typing import Any

SAFE_ID = re.compile(r"[A-Za-z0-9_.:-]{1,128}")  # ids that name a topic level
MAX_HEADER_BYTES = 4096  # a job's JSON header line
MAX_FIELD_CHARS = 256  # ids, languages, engine names, error messages
PCM_RATE = 16000
REPLY_TYPES = ("claim", "result", "error", "refused")
DIGEST = re.compile(r"[0-9a-f]{32}")  # a home grammar's name: blake2b-128 of its body, hex
GRAMMAR_FORMAT = 1
GRAMMAR_EXPANSION = 8
"""A grammar's JSON may be at most this many times its message's cap once decompressed."""


class BadMessage(ValueError):
    """A job or reply that breaks the schema; ``job``/``front`` when they could be read."""

    def __init__(self, reason: str, job: str | None = None, front: str | None = None) -> None:
        super().__init__(reason)
        self.job = job
        self.front = front


def safe_id(value: str) -> str:
    """``value`` made usable as one topic level (characters outside SAFE_ID become ``_``)."""
    return re.sub(r"[^A-Za-z0-9_.:-]", "_", value)[:128] or "_"


@dataclass(frozen=True)
class Topics:
    prefix: str
    group: str

    def jobs(self, worker_id: str) -> str:
        """One worker's jobs: the front end picks a live worker and publishes to it."""
        return f"{self.prefix}/jobs/{worker_id}"

    def reply(self, front_id: str, worker_id: str) -> str:
        """Where a worker answers a front end: fixed by the two ids, never by the job."""
        return f"{self.prefix}/reply/{front_id}/{worker_id}"

    def replies(self, front_id: str) -> str:
        return f"{self.prefix}/reply/{front_id}/+"

    def worker(self, worker_id: str) -> str:
        return f"{self.prefix}/workers/{worker_id}"

    def grammar(self, front_id: str, language: str) -> str:
        """A front end's home grammar of ``language``, retained: what its jobs name."""
        return f"{self.prefix}/grammar/{front_id}/{safe_id(language)}"

    @property
    def grammars(self) -> str:
        return f"{self.prefix}/grammar/+/+"

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
    return f"{safe_id(run_id)[:100]}-{digest.hexdigest()}"


def _text(header: dict[str, Any], key: str, *, optional: bool = False, limit: int = 0) -> Any:
    value = header.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise BadMessage(f"{key!r} must be a string, not {type(value).__name__}")
    if len(value) > (limit or MAX_FIELD_CHARS):
        raise BadMessage(f"{key!r} is {len(value)} characters (at most {limit or MAX_FIELD_CHARS})")
    return value


def _number(header: dict[str, Any], key: str) -> float:
    value = header.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadMessage(f"{key!r} must be a number, not {type(value).__name__}")
    return float(value)


def _object(payload: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(payload)
    except ValueError as exc:
        raise BadMessage(f"{what} is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadMessage(f"{what} is a JSON {type(value).__name__}, not an object")
    return value


def _id(header: dict[str, Any], key: str) -> str | None:
    value = header.get(key)
    return value if isinstance(value, str) and SAFE_ID.fullmatch(value) else None


@dataclass(frozen=True)
class Job:
    """One utterance: 16 kHz mono 16-bit PCM, which front end wants the answer, until when."""

    id: str
    front: str  # the front end's id: the answer goes to <prefix>/reply/<front>/<worker>
    deadline: float  # epoch seconds: a worker drops a job it gets later
    audio: bytes
    language: str | None = None
    rate: int = PCM_RATE
    run_id: str | None = None
    grammar: str | None = None  # the digest of the home grammar to recognize with

    def encode(self) -> bytes:
        header = {k: v for k, v in asdict(self).items() if k != "audio"}
        return json.dumps(header).encode() + b"\n" + self.audio

    @classmethod
    def decode(cls, payload: bytes, max_audio_bytes: int) -> Job:
        """The job in ``payload``; BadMessage (with the id and front when readable) if not."""
        end = payload.find(b"\n", 0, MAX_HEADER_BYTES + 1)
        if end < 0:
            raise BadMessage(f"job without a header line of at most {MAX_HEADER_BYTES} bytes")
        header = _object(payload[:end], "the job header")
        job, front = _id(header, "id"), _id(header, "front")
        try:
            return cls._checked(header, payload, end + 1, max_audio_bytes)
        except BadMessage as exc:
            raise BadMessage(str(exc), job, front) from None

    @classmethod
    def _checked(cls, header: dict[str, Any], payload: bytes, start: int, cap: int) -> Job:
        for key in ("id", "front"):
            if _id(header, key) is None:
                raise BadMessage(f"{key!r} must be a string of {SAFE_ID.pattern}")
        size = len(payload) - start
        if size > cap:
            seconds = cap / (2 * PCM_RATE)
            raise BadMessage(f"audio of {size} bytes is over the cap ({cap} bytes, {seconds:g} s)")
        if size % 2:
            raise BadMessage("audio of an odd number of bytes is not 16-bit PCM")
        rate = header.get("rate", PCM_RATE)
        if rate != PCM_RATE:
            raise BadMessage(f"'rate' must be {PCM_RATE}, not {rate!r}")
        return cls(
            id=header["id"],
            front=header["front"],
            deadline=_number(header, "deadline"),
            audio=payload[start:],
            language=_text(header, "language", optional=True, limit=16),
            run_id=_text(header, "run_id", optional=True, limit=128),
            grammar=_digest(header),
        )


def _digest(header: dict[str, Any]) -> str | None:
    value = header.get("grammar")
    if value is None:
        return None
    if not isinstance(value, str) or not DIGEST.fullmatch(value):
        raise BadMessage(f"'grammar' must be a digest of {DIGEST.pattern}")
    return value


def grammar_digest(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=16, person=b"voiced-home").hexdigest()


@dataclass(frozen=True)
class GrammarMessage:
    """A front end's home grammar (``intent_hassil.portable`` data as JSON, zlib-compressed),
    published retained on ``<prefix>/grammar/<front>/<language>``: a JSON header line (digest,
    language, format, size), then the body. The digest is of the body: a worker checks it, and
    a job names the grammar by it."""

    digest: str
    language: str
    body: bytes

    @classmethod
    def of(cls, data: dict[str, Any], language: str) -> GrammarMessage:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
        body = zlib.compress(text.encode(), 6)
        return cls(grammar_digest(body), language, body)

    def encode(self) -> bytes:
        header = {
            "digest": self.digest,
            "language": self.language,
            "format": GRAMMAR_FORMAT,
            "bytes": len(self.body),
        }
        return json.dumps(header).encode() + b"\n" + self.body

    @classmethod
    def decode(cls, payload: bytes, max_bytes: int) -> GrammarMessage:
        """The grammar message in ``payload`` (at most ``max_bytes``); BadMessage if it breaks
        the schema or its body does not have the digest it names."""
        if len(payload) > max_bytes:
            raise BadMessage(f"a grammar of {len(payload)} bytes is over the cap ({max_bytes})")
        end = payload.find(b"\n", 0, MAX_HEADER_BYTES + 1)
        if end < 0:
            raise BadMessage(f"grammar without a header line of at most {MAX_HEADER_BYTES} bytes")
        header = _object(payload[:end], "the grammar header")
        if header.get("format") != GRAMMAR_FORMAT:
            raise BadMessage(f"'format' must be {GRAMMAR_FORMAT}, not {header.get('format')!r}")
        digest = header.get("digest")
        if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
            raise BadMessage(f"'digest' must be of {DIGEST.pattern}")
        body = payload[end + 1 :]
        if header.get("bytes") != len(body):
            raise BadMessage(f"'bytes' says {header.get('bytes')!r}, the body has {len(body)}")
        if grammar_digest(body) != digest:
            raise BadMessage(f"the body's digest is not {digest} (wrong digest or a damaged body)")
        return cls(digest, _text(header, "language", limit=16), body)

    def data(self, max_bytes: int) -> Any:
        """The grammar's data: the body decompressed (at most ``max_bytes``) and parsed."""
        inflate = zlib.decompressobj()
        try:
            text = inflate.decompress(self.body, max_bytes)
        except zlib.error as exc:
            raise BadMessage(f"the grammar's body is not zlib data: {exc}") from None
        if inflate.unconsumed_tail:
            raise BadMessage(f"the grammar is over {max_bytes} bytes decompressed")
        if not inflate.eof:
            raise BadMessage("the grammar's body is truncated")
        try:
            return json.loads(text)
        except ValueError as exc:
            raise BadMessage(f"the grammar is not JSON: {exc}") from None


@dataclass(frozen=True)
class Reply:
    """``claim`` (a worker started on it), ``result`` (the text), ``error`` or ``refused``
    (the job broke the schema; ``message`` says how)."""

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
    def decode(cls, payload: bytes, max_bytes: int) -> Reply:
        """The reply in ``payload`` (at most ``max_bytes``); BadMessage if not."""
        if len(payload) > max_bytes:
            raise BadMessage(f"a reply of {len(payload)} bytes is over the cap ({max_bytes})")
        raw = _object(payload, "the reply")
        kind = raw.get("type")
        if kind not in REPLY_TYPES:
            raise BadMessage(f"'type' must be one of {', '.join(REPLY_TYPES)}, not {kind!r}")
        data = raw.get("data", {})
        if not isinstance(data, dict):
            raise BadMessage("'data' must be an object")
        asr_s = _number(raw, "asr_s") if "asr_s" in raw else 0.0
        return cls(
            id=_text(raw, "id"),
            type=kind,
            worker=_text(raw, "worker"),
            text=_text(raw, "text", optional=True, limit=max_bytes) or "",
            language=_text(raw, "language", optional=True, limit=16),
            engine=_text(raw, "engine", optional=True) or "",
            asr_s=asr_s,
            message=_text(raw, "message", optional=True, limit=1024) or "",
            data=data,
        )


def worker_status(worker_id: str, online: bool, **info: Any) -> bytes:
    return json.dumps({"worker": worker_id, "online": online, **info}).encode()
