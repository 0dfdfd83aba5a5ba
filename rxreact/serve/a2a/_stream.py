"""A task's updates on the event loop: what the A2A routes stream and fold.

The run's threads hand the updates over with ``call_soon_threadsafe`` (as the chat endpoints'
``ChunkPipe`` does); :func:`resumed` streams them after the task a client that saw some of them
had, :func:`settle` folds them into the task they end with.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Final

from a2a.types.a2a_pb2 import Message, Task, TaskArtifactUpdateEvent
from reactivex import Observable

from rxreact.serve.a2a import A2AUpdate, apply_update

__all__ = ["resumed", "settle"]

_END: Final = object()


class _Inbox:
    """An Observable's items handed to the event loop that subscribed (the run's threads only
    ``call_soon_threadsafe``); ``None`` once it completed. Closing detaches this subscriber
    and nothing else: a hot run goes on."""

    def __init__(self, source: Observable[A2AUpdate]) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._subscription = source.subscribe(self._put, self._put, lambda: self._put(_END))

    def _put(self, item: object) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: the server is shutting down
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    async def get(self) -> A2AUpdate | None:
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)
            return None
        if isinstance(item, BaseException):
            raise item
        return item  # type: ignore[return-value]

    def empty(self) -> bool:
        return self._queue.empty()

    def close(self) -> None:
        self._subscription.dispose()


async def resumed(
    updates: Observable[A2AUpdate], after: int, asked: Message | None
) -> AsyncIterator[A2AUpdate]:
    """The task's updates for a client that has seen those up to ``seq`` ``after``: first the
    task folded from them (with ``asked`` in its history), then each later update.

    The task goes out once an update past ``after`` comes, or once those up to it are all
    read (nothing more queued), or at the end: a resubscription to a quiet run is answered at
    once, one after the last event of an ended run is its final task alone.
    """
    inbox = _Inbox(updates)
    task = Task()
    try:
        while True:
            update = await inbox.get()
            if update is None:
                yield task
                return
            if _seq_of(update) > after:
                yield task
                yield update
                break
            apply_update(task, update)
            if isinstance(update, Task) and asked is not None:
                task.history.append(asked)
            final_chunk = isinstance(update, TaskArtifactUpdateEvent) and update.last_chunk
            if _seq_of(update) >= after and inbox.empty() and not final_chunk:
                yield task
                break
        while (update := await inbox.get()) is not None:
            yield update
    finally:
        inbox.close()


async def settle(
    updates: Observable[A2AUpdate], asked: Message | None, timeout: float | None
) -> Task:
    """The task the updates fold into by the run's end (or as it stands after ``timeout``)."""
    inbox = _Inbox(updates)
    task = Task()
    try:
        async with asyncio.timeout(timeout):
            while (update := await inbox.get()) is not None:
                apply_update(task, update)
                if isinstance(update, Task) and asked is not None:
                    task.history.append(asked)
    except TimeoutError:
        pass  # a run still going (queued behind another on its conversation): as it stands
    finally:
        inbox.close()
    return task


def _seq_of(update: A2AUpdate) -> int:
    if isinstance(update, Task) or "seq" not in update.metadata.fields:
        return 0
    return int(update.metadata.fields["seq"].number_value)
