"""Freed heap memory given back to the system, so that RSS follows what the daemon holds.

glibc keeps the memory a program frees inside its heaps, touched and resident, and gives it
back only from the top of a heap. A rescoring pass copies the encoder output once per
candidate (tens of MB for a moment); when something long-lived lands above that peak, the
freed pages under it stay in RSS for good. In the 10-minute soak that was one random step of
+40 MB (+7-11 %) while the memory in use stayed flat (#16, docs/benchmarks.md "Soak").
``malloc_trim(0)`` hands every free page of every heap back (``madvise``); the daemon calls
it every few seconds in a worker thread. Elsewhere than glibc it is a no-op.
"""

from __future__ import annotations

import ctypes
import logging
import time
from typing import Any

log = logging.getLogger(__name__)

TRIM_EVERY_S = 5.0
"""How often the daemon gives freed heap memory back."""

_UNSET: Any = object()
_trim: Any = _UNSET


def _malloc_trim() -> Any:
    global _trim
    if _trim is _UNSET:
        try:
            _trim = ctypes.CDLL(None).malloc_trim
            _trim.argtypes = [ctypes.c_size_t]
            _trim.restype = ctypes.c_int
        except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to do
            _trim = None
    return _trim


def can_trim() -> bool:
    """Whether this C library can give freed heap memory back (glibc)."""
    return _malloc_trim() is not None


def give_back() -> float:
    """Free heap pages back to the system; the seconds it took (0 where it can't)."""
    trim = _malloc_trim()
    if trim is None:
        return 0.0
    started = time.perf_counter()
    trim(0)
    return time.perf_counter() - started
