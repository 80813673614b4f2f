"""The bounds one request meets (voiced/limits.py), and the loop-lag monitor the abuse suite
(tests/test_abuse.py) runs every probe under."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from loop_lag import loop_lag

from voiced import events as ev
from voiced.limits import Admission, CommandRefused, TextTooLong, check_say_text
from voiced.logs import RepeatLimit


def test_the_lag_monitor_fails_on_cpu_work_on_the_loop() -> None:
    async def busy() -> None:
        deadline = time.thread_time() + 0.3
        while time.thread_time() < deadline:
            pass

    with loop_lag() as monitor:
        asyncio.run(busy())
    with pytest.raises(AssertionError, match=r"worked 0\.3"):
        monitor.check()


def test_the_lag_monitor_fails_on_a_blocking_call_on_the_loop() -> None:
    async def blocking() -> None:
        time.sleep(1.2)  # no CPU, but the loop is held: only the wall time tells

    with loop_lag() as monitor:
        asyncio.run(blocking())
    with pytest.raises(AssertionError, match=r"held the loop 1\.[2-9]"):
        monitor.check()


def test_the_lag_monitor_passes_a_loop_that_only_waits() -> None:
    with loop_lag() as monitor:
        asyncio.run(asyncio.sleep(0.3))
    monitor.check()


def test_events_carry_the_start_of_a_long_text_and_its_length() -> None:
    data = ev.TtsStart("x" * 1_000_000, 1).event("run", "kitchen").data
    assert len(data["text"]) < 1100
    assert data["text"].startswith("x" * 1000) and "999000 more characters" in data["text"]
    assert ev.TtsStart("short. text.", 2).event().data["text"] == "short. text."


def test_text_over_the_limit_is_refused_naming_the_setting() -> None:
    check_say_text("a" * 10, 10)
    with pytest.raises(TextTooLong, match=r"11 characters, over the limit of 10.*max_say_chars"):
        check_say_text("a" * 11, 10)


async def test_admission_runs_a_site_s_commands_in_order_and_refuses_past_the_limit() -> None:
    admission = Admission(2, "say")
    order: list[str] = []
    release = asyncio.Event()

    async def command(name: str, site: str = "kitchen") -> None:
        async with admission.admit(site):
            order.append(f"{name} start")
            await release.wait()
            order.append(f"{name} end")

    first = asyncio.create_task(command("a"))
    second = asyncio.create_task(command("b"))
    await asyncio.sleep(0)
    with pytest.raises(CommandRefused, match=r"2 already queued.*max_commands_per_site = 2"):
        await command("c")
    assert admission.pending("kitchen") == 2 and admission.pending("porch") == 0
    release.set()
    await asyncio.gather(first, second)
    assert order == ["a start", "a end", "b start", "b end"]
    assert admission.pending("kitchen") == 0 and not admission._locks  # nothing kept


def test_a_flood_of_one_warning_is_cut_to_a_burst_and_a_count() -> None:
    limit = RepeatLimit(burst=3, window=0.2)

    def record(message: str, level: int = logging.ERROR) -> logging.LogRecord:
        return logging.LogRecord("asyncio", level, __file__, 1, message, None, None)

    passed = [limit.filter(record("socket.accept() out of system resource")) for _ in range(1000)]
    assert passed.count(True) == 3
    assert limit.filter(record("another error"))  # another kind has its own budget
    assert all(limit.filter(record("chatty", logging.INFO)) for _ in range(100))  # info: all
    time.sleep(0.25)
    after = record("socket.accept() out of system resource")
    assert limit.filter(after)
    assert after.getMessage().endswith("(997 more like this were not logged)")
