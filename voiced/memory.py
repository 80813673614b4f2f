"""Freed heap memory given back to the system, so that RSS follows what the daemon holds.

glibc keeps the memory a program frees inside its heaps, touched and resident, and gives it
back only from the top of a heap. A rescoring pass copies the encoder output once per
candidate (tens of MB for a moment); when something long-lived lands above that peak, the
freed pages under it stay in RSS for good. And once a big block that glibc had mapped on its
own is freed, glibc raises its thresholds (up to 32 MB mapped apart, 64 MB kept at a heap's
top), so later peaks land in the heaps and stay. In the 10-minute soak each was a random step
of +26-40 MB (+7-8 %) while the memory in use stayed flat (#16, docs/benchmarks.md "Soak").

So the daemon, at start, fixes glibc's thresholds: blocks of 32 MB and more mapped apart
(unmapped when freed), at most 8 MB kept free at a heap's top. And every few seconds
``malloc_trim(0)`` hands the free pages inside the heaps back (``madvise``). Elsewhere than
glibc both are no-ops. (A mapping threshold of 1 MB holds RSS as flat but costs Whisper 45 %
more CPU: every decoder step then maps and faults in fresh pages.)
"""

from __future__ import annotations

import ctypes
import logging
import time
from typing import Any

log = logging.getLogger(__name__)

TRIM_EVERY_S = 5.0
"""How often the daemon gives freed heap memory back."""
MMAP_THRESHOLD = 32 << 20
"""Blocks from this size on are mapped apart: glibc's own ceiling for its dynamic threshold
(which starts at 128 KB), fixed so that glibc does not raise the trim threshold with it."""
TRIM_THRESHOLD = 8 << 20
"""Free memory kept at the top of a heap (glibc's dynamic one rises to 64 MB); the rest goes
back to the system as soon as it is freed."""
M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters
M_MMAP_THRESHOLD = -3

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


def _libc_mallopt() -> Any:
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt


def fix_thresholds() -> bool:
    """glibc's mmap and trim thresholds fixed (MMAP_THRESHOLD, TRIM_THRESHOLD); whether they
    were set (False: not glibc). Before the models load."""
    mallopt = _libc_mallopt() if can_trim() else None  # can_trim: this is glibc
    if mallopt is None:
        return False
    return all(
        mallopt(param, value) == 1
        for param, value in ((M_MMAP_THRESHOLD, MMAP_THRESHOLD), (M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    )


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
