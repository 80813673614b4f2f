"""The queue of utterances waiting for ASR, which can give up the oldest of one kind."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class UtteranceQueue(asyncio.Queue, Generic[T]):
    """A bounded asyncio queue that can take out its oldest item that matches, wherever it
    is: drop-oldest for a microphone must not take a file's utterance queued before it."""

    def take_oldest(self, matches: Callable[[T], bool]) -> T | None:
        for item in self._queue:  # asyncio.Queue keeps its items in a deque, oldest first
            if matches(item):
                self._queue.remove(item)
                self.task_done()  # it will never be processed: join() must not wait for it
                return item
        return None
