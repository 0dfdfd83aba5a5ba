"""Cooperative backpressure for a producer that runs on an asyncio event loop.

:func:`~rxreact.operators.deliver_on` holds a fast producer back by blocking the producing
thread in ``on_next`` until the consumer catches up. That is right for a thread that reads one
stream, and wrong for the shared I/O loop of :mod:`rxreact.model.http._aio`: blocking it
would stall every stream of the process. So a loop-mode reader registers a :class:`Valve` for
its task (:meth:`Valve.attach`) while it emits; a consumer that is full finds it
(:func:`current`) and closes it instead of blocking, and the reader awaits it open before its
next read. The bound is then the consumer's buffer plus the events of one read, and the other
streams on the loop keep flowing.

The valve is looked up when a buffer is full and once per hand-off of a batch, never per item.
"""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["Valve", "current"]

# A dict keyed by task, not a ContextVar: setting one in the task's context made a new
# context mapping (two objects) per attempt, and the connection's socket reader, registered
# from that context, kept a copy of it, and with it a finished attempt's valve, for as long
# as the pooled connection lived: five objects per live stream for every collection to walk.
_BY_TASK: dict[asyncio.Task[Any], Valve] = {}


class Valve:
    """Open or closed; closed by a full consumer (any thread), opened when it has room again.

    ``close`` and ``open`` may be called from any thread (a consumer serialises its own calls
    under its lock); :meth:`wait_open` only on the valve's loop, by the one producer.
    """

    __slots__ = ("_loop", "_waiter", "closed")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False
        """Read by the producer after each read: ``True`` means await :meth:`wait_open`."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop the producer runs on (its consumers may batch their hand-offs there)."""
        return self._loop

    def close(self) -> None:
        """Ask the producer to stop reading after the events it is handing over now."""
        self.closed = True

    def open(self) -> None:
        """Let the producer read again (wakes it if it waits)."""
        if self.closed:
            self.closed = False
            self._loop.call_soon_threadsafe(self._wake)

    async def wait_open(self) -> None:
        """Return once the valve is open (at once if it is)."""
        # _wake runs on this loop, so between the check and the await nothing can open the
        # valve unseen: an open() in between queues a _wake that finds the waiter.
        while self.closed:
            waiter = self._waiter = self._loop.create_future()
            try:
                await waiter
            finally:
                self._waiter = None

    def attach(self, task: asyncio.Task[Any]) -> None:
        """Make this the valve :func:`current` finds while ``task`` runs (on the loop)."""
        _BY_TASK[task] = self

    def detach(self, task: asyncio.Task[Any]) -> None:
        """Undo :meth:`attach` (the task is ending)."""
        if _BY_TASK.get(task) is self:
            del _BY_TASK[task]

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


def current() -> Valve | None:
    """The valve of the loop-mode reader whose task is running (emitting) on this thread, else
    ``None``: a blocking producer (a thread), which a full consumer may hold back by blocking
    it."""
    loop = asyncio._get_running_loop()  # None, not an exception, on a thread without a loop
    if loop is None:
        return None
    task = asyncio.current_task(loop)
    return None if task is None else _BY_TASK.get(task)
