"""Secrets out of every log record: the access token, whoever logs it.

The websockets library logs each frame at DEBUG, the auth frame with the token included
(shortened to its first and last characters, both secret). ``protect(token)`` registers a
secret; from then on every record made by any logger, this plugin's or a third party's, has
the secret, an ``"access_token": "…"`` value and a ``Bearer …`` header replaced by ``***``
before any handler or filter sees it (a log record factory: a filter on one logger would miss
the records of its children).
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

MASK = "***"
_PATTERNS = (
    re.compile(r"""(["']?access_token["']?\s*[:=]\s*["']?)[^"'\s,}]*"""),
    re.compile(r"(Bearer\s+)[^\s'\"]+", re.IGNORECASE),
)
_secrets: set[str] = set()
_lock = threading.Lock()
_installed = False


def redact(text: str) -> str:
    """``text`` with every registered secret and token-looking value masked."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + MASK, text)
    return text


class SecretFilter(logging.Filter):
    """A logging filter that masks secrets in a record's message (it never drops one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        scrub(record)
        return True


def scrub(record: logging.LogRecord) -> None:
    """Replace ``record``'s message by its redacted text when it holds a secret."""
    try:
        message = record.getMessage()
    except Exception:  # a bad format string: logging reports it itself later
        return
    cleaned = redact(message)
    if cleaned != message:
        record.msg, record.args = cleaned, None


def protect(secret: str) -> None:
    """Mask ``secret`` in every log record from now on (short strings are not secrets)."""
    if len(secret) >= 8:
        with _lock:
            _secrets.add(secret)
    _install()


def _install() -> None:
    global _installed
    with _lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            scrub(record)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True


def secret_logger(name: str) -> logging.Logger:
    """The logger ``name`` with a SecretFilter (records it makes are masked even under a log
    record factory installed after ours)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, SecretFilter) for f in logger.filters):
        logger.addFilter(SecretFilter())
    return logger
