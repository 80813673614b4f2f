"""Logging: readable lines on stderr; under journald, entries with priorities and fields.

When stderr is the journal (``JOURNAL_STREAM``), each record goes to journald's native socket
as one entry: ``MESSAGE``, ``PRIORITY``, ``LOGGER``, ``CODE_*`` and the record's
``journal_fields`` (e.g. ``RUN_ID``, ``SITE_ID`` on run events, see ``fields()``). Where the
socket cannot be reached, lines go to stderr with a ``<N>`` priority prefix instead.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import struct
import sys
import time
from typing import Any, ClassVar

JOURNAL_SOCKET = "/run/systemd/journal/socket"
SYSLOG_IDENTIFIER = "voiced"

PRIORITY: dict[int, int] = {
    logging.DEBUG: 7,
    logging.INFO: 6,
    logging.WARNING: 4,
    logging.ERROR: 3,
    logging.CRITICAL: 2,
}


def priority(levelno: int) -> int:
    """The syslog priority of a logging level (levels in between round to the next lower)."""
    for level in sorted(PRIORITY, reverse=True):
        if levelno >= level:
            return PRIORITY[level]
    return 7


def under_journald() -> bool:
    """systemd sets JOURNAL_STREAM to the device:inode of stderr when it goes to the journal."""
    stream = os.environ.get("JOURNAL_STREAM", "")
    if not stream:
        return False
    try:
        st = os.fstat(sys.stderr.fileno())
    except (OSError, ValueError):
        return False
    return stream == f"{st.st_dev}:{st.st_ino}"


def fields(**values: Any) -> dict[str, dict[str, str]]:
    """``extra=`` for a log call: journal fields (upper-case names; None values are left out)."""
    return {"journal_fields": {k.upper(): str(v) for k, v in values.items() if v is not None}}


LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def setup_logging(level: str = "INFO") -> None:
    asked = os.environ.get("VOICED_LOG_LEVEL", level).upper()
    level = asked if asked in LEVELS else "INFO"
    handler: logging.Handler
    if under_journald():  # the journal stamps time and host itself
        handler = JournalHandler.if_reachable() or logging.StreamHandler(sys.stderr)
        if not isinstance(handler, JournalHandler):
            handler.setFormatter(JournalFormatter("%(name)s: %(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S")
        )
    handler.addFilter(RepeatLimit())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    if asked != level:
        logging.getLogger("voiced").warning(
            "VOICED_LOG_LEVEL=%s is not a level (%s); logging at INFO", asked, ", ".join(LEVELS)
        )
    for noisy in ("httpx", "urllib3", "faster_whisper", "amqtt", "transitions"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


class RepeatLimit(logging.Filter):
    """At most ``burst`` warnings or errors of one kind (logger, level, message template) per
    ``window`` seconds; the next one after a quiet window says how many were left out. A flood
    (a client hammering the server, a resource running out) can't fill the disk."""

    def __init__(self, burst: int = 10, window: float = 60.0) -> None:
        super().__init__()
        self.burst, self.window = burst, window
        self._seen: dict[tuple[str, int, str], list[float]] = {}  # [window start, count, left out]

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, record.levelno, str(record.msg)[:200])
        now = time.monotonic()
        seen = self._seen.get(key)
        if seen is None or now - seen[0] > self.window:
            left_out = int(seen[2]) if seen else 0
            self._seen[key] = [now, 1, 0]
            if len(self._seen) > 1000:  # many kinds: forget the oldest
                del self._seen[next(iter(self._seen))]
            if left_out:
                record.msg = f"{record.msg} ({left_out} more like this were not logged)"
            return True
        seen[1] += 1
        if seen[1] <= self.burst:
            return True
        seen[2] += 1
        return False


class JournalFormatter(logging.Formatter):
    """Prefixes the syslog priority (<3> error, <4> warning, <6> info, <7> debug) for journald."""

    PRIORITY: ClassVar[dict[int, int]] = PRIORITY

    def format(self, record: logging.LogRecord) -> str:
        return f"<{priority(record.levelno)}>{super().format(record)}"


_FIELD_NAME = re.compile(r"^[A-Z0-9][A-Z0-9_]*$")


def encode_entry(entry: dict[str, str]) -> bytes:
    """journald's native format: ``NAME=value\\n``, or ``NAME\\n<le64 length>value\\n``."""
    out = bytearray()
    for name, value in entry.items():
        if not _FIELD_NAME.match(name):
            continue
        data = value.encode("utf-8", "replace")
        if b"\n" in data:
            out += name.encode() + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
        else:
            out += name.encode() + b"=" + data + b"\n"
    return bytes(out)


class JournalHandler(logging.Handler):
    """Sends each record to journald as one structured entry (its native datagram protocol)."""

    def __init__(self, address: str = JOURNAL_SOCKET, identifier: str = SYSLOG_IDENTIFIER):
        super().__init__()
        self.address = address
        self.identifier = identifier
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        self.fallback = logging.StreamHandler(sys.stderr)
        self.fallback.setFormatter(JournalFormatter("%(name)s: %(message)s"))

    @classmethod
    def if_reachable(cls, address: str = JOURNAL_SOCKET) -> JournalHandler | None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect(address)
            except OSError:
                return None
        return cls(address)

    def entry(self, record: logging.LogRecord) -> dict[str, str]:
        entry = {
            "MESSAGE": self.format(record),
            "PRIORITY": str(priority(record.levelno)),
            "SYSLOG_IDENTIFIER": self.identifier,
            "LOGGER": record.name,
            "CODE_FILE": record.pathname or "",
            "CODE_LINE": str(record.lineno),
            "CODE_FUNC": record.funcName or "",
            "THREAD_NAME": record.threadName or "",
        }
        entry.update(getattr(record, "journal_fields", None) or {})
        return entry

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.sock.sendto(encode_entry(self.entry(record)), self.address)
        except OSError:  # journald away, or an entry bigger than a datagram: plain stderr
            self.fallback.emit(record)
        except Exception:
            self.handleError(record)

    def close(self) -> None:
        self.sock.close()
        super().close()


def set_level(level: str) -> None:
    logging.getLogger().setLevel(level.upper())


def report_fatal(text: str) -> None:
    """A message the process exits on: one journal entry at priority err, else stderr."""
    if under_journald():
        handler = JournalHandler.if_reachable()
        if handler is not None:
            handler.setFormatter(logging.Formatter("%(message)s"))
            handler.emit(logging.LogRecord("voiced", logging.ERROR, "", 0, "%s", (text,), None))
            handler.close()
            return
    print(text, file=sys.stderr)
