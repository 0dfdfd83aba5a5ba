"""An Observable of UI chunks as the body of one streaming HTTP response (asyncio side)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Final

from reactivex import Observable

from rxreact.serve._sse import DONE, UIChunk

__all__ = ["ChunkPipe"]

_END: Final = object()
HEARTBEAT: Final = ": keep-alive\n\n"
"""An SSE comment: ignored by every reader, it keeps proxies from closing an idle stream."""


class ChunkPipe:
    """Subscribes to ``source`` and hands its chunks to the event loop that made the pipe.

    The run's threads only ``call_soon_threadsafe``; the response reads the queue. Disposing the
    pipe (the client left) detaches this subscriber and nothing else: a hot run goes on.
    """

    def __init__(self, source: Observable[UIChunk], *, heartbeat: float) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._heartbeat = heartbeat
        self._subscription = source.subscribe(self._put, self._put, lambda: self._put(_END))

    def _put(self, item: object) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: the server is shutting down
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    async def first(self) -> list[UIChunk] | None:
        """Wait for the first chunks (``None`` if the stream ended without any)."""
        item = await self._queue.get()
        if item is _END:
            self._queue.put_nowait(_END)
            return None
        if isinstance(item, BaseException):
            raise item
        return self._batch(item)

    def _batch(self, item: object) -> list[UIChunk]:
        # Everything already queued goes out in one write: the parts of one event stay together.
        batch = [item]
        while not self._queue.empty():
            batch.append(self._queue.get_nowait())
        if _END in batch:
            self._queue.put_nowait(_END)
        return [c for c in batch if isinstance(c, UIChunk)]

    async def body(self, first: list[UIChunk] | None = None) -> AsyncIterator[str]:
        """The SSE body: chunks, a heartbeat comment whenever the run is quiet, then ``[DONE]``."""
        try:
            if first:
                yield "".join(c.to_sse() for c in first)
            while True:
                try:
                    item = await asyncio.wait_for(self._queue.get(), self._heartbeat)
                except TimeoutError:
                    yield HEARTBEAT
                    continue
                if item is _END:
                    yield DONE
                    return
                if isinstance(item, BaseException):
                    raise item
                batch = self._batch(item)
                if batch:
                    yield "".join(c.to_sse() for c in batch)
        finally:
            self.close()

    def close(self) -> None:
        """Detach from the source (idempotent)."""
        self._subscription.dispose()
