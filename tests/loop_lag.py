"""A loop-lag monitor for tests: which loop callback held the event loop, and for how long.

Every callback the loop runs (task steps included) is timed: the loop thread's CPU time, which
other processes on a busy test machine can't inflate, and its wall time less the time the
thread sat ready in the kernel's run queue (Linux's per-thread schedstat), which is the busy
machine's, not the callback's. ``check()`` fails when a callback did more than ``cpu_limit`` of
work on the loop (CPU-heavy work belongs in a thread) or held it more than ``wall_limit`` in all
(a blocking call).
"""

from __future__ import annotations

import asyncio.events
import contextlib
import os
import threading
import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class LoopLag:
    cpu_limit: float = 0.1
    wall_limit: float = 1.0
    worst_cpu: tuple[float, str] = (0.0, "")
    worst_wall: tuple[float, str] = (0.0, "")
    callbacks: int = 0
    _thread: int | None = field(default=None, repr=False)

    def record(self, handle: asyncio.events.Handle, cpu: float, wall: float) -> None:
        self.callbacks += 1
        if cpu > self.worst_cpu[0]:
            self.worst_cpu = (cpu, repr(handle)[:300])
        if wall > self.worst_wall[0]:
            self.worst_wall = (wall, repr(handle)[:300])

    def check(self) -> None:
        assert self.callbacks, "the monitor saw no loop callbacks"
        cpu, where = self.worst_cpu
        assert cpu <= self.cpu_limit, f"a loop callback worked {cpu:.3f} s on the loop: {where}"
        wall, where = self.worst_wall
        assert wall <= self.wall_limit, f"a loop callback held the loop {wall:.3f} s: {where}"


class RunQueueWait:
    """Nanoseconds this thread has waited, ready to run, for a CPU (0 where not on Linux)."""

    def __init__(self) -> None:
        try:
            self._fd: int | None = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        except OSError:
            self._fd = None
        else:  # closed with the object: the block may end inside a callback being timed
            weakref.finalize(self, os.close, self._fd)

    def seconds(self) -> float:
        if self._fd is None:
            return 0.0
        return int(os.pread(self._fd, 100, 0).split()[1]) / 1e9


@contextlib.contextmanager
def loop_lag(cpu_limit: float = 0.1, wall_limit: float = 1.0) -> Iterator[LoopLag]:
    """Time every callback of the loop running on this thread while the block runs."""
    monitor = LoopLag(cpu_limit, wall_limit, _thread=threading.get_ident())
    waiting = RunQueueWait()  # opened on the loop's thread: it reads that thread's figures
    original = asyncio.events.Handle._run

    def timed(handle: asyncio.events.Handle) -> None:
        if threading.get_ident() != monitor._thread:
            return original(handle)
        cpu, wall, queued = time.thread_time(), time.perf_counter(), waiting.seconds()
        try:
            return original(handle)
        finally:
            held = time.perf_counter() - wall - (waiting.seconds() - queued)
            monitor.record(handle, time.thread_time() - cpu, held)

    asyncio.events.Handle._run = timed  # type: ignore[method-assign]
    try:
        yield monitor
    finally:
        asyncio.events.Handle._run = original  # type: ignore[method-assign]
