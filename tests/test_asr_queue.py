"""The ASR queue gives up the oldest utterance of one kind, and join() still ends."""

from __future__ import annotations

import asyncio

from voiced.asr_queue import UtteranceQueue


async def test_take_oldest_takes_the_first_match_and_join_does_not_wait_for_it():
    queue: UtteranceQueue[str] = UtteranceQueue(3)
    for item in ("file-1", "mic-1", "mic-2"):
        queue.put_nowait(item)
    assert queue.take_oldest(lambda i: i.startswith("mic")) == "mic-1"
    assert queue.take_oldest(lambda i: i.startswith("pipe")) is None
    assert not queue.full()
    assert [queue.get_nowait(), queue.get_nowait()] == ["file-1", "mic-2"]
    queue.task_done()
    queue.task_done()
    await asyncio.wait_for(queue.join(), 1)  # the taken one counts as done
