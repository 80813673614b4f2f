"""Logging: readable lines on stderr; no timestamps of our own under journald."""

from __future__ import annotations

import logging
import os
import sys
from typing import ClassVar


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


def setup_logging(level: str = "INFO") -> None:
    level = os.environ.get("VOICED_LOG_LEVEL", level).upper()
    handler = logging.StreamHandler(sys.stderr)
    if under_journald():  # the journal stamps time and host itself
        handler.setFormatter(JournalFormatter("%(name)s: %(message)s"))
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S")
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "urllib3", "faster_whisper", "amqtt", "transitions"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, root.level))


class JournalFormatter(logging.Formatter):
    """Prefixes the syslog priority (<3> error, <4> warning, <6> info, <7> debug) for journald."""

    PRIORITY: ClassVar[dict[int, int]] = {
        logging.DEBUG: 7,
        logging.INFO: 6,
        logging.WARNING: 4,
        logging.ERROR: 3,
        logging.CRITICAL: 2,
    }

    def format(self, record: logging.LogRecord) -> str:
        return f"<{self.PRIORITY.get(record.levelno, 6)}>{super().format(record)}"


def set_level(level: str) -> None:
    logging.getLogger().setLevel(level.upper())
