"""Loop mode: every model stream of the process read on ONE shared asyncio event loop.

Thread mode gives each attempt its own OS thread, blocked in ``recv``. At a thousand
concurrent streams that is a thousand threads, whose wake-ups contend for the GIL: chunks
wait behind each other for hundreds of milliseconds. Here one daemon thread (``rxreact-io``,
started on first use) runs an event loop, and each attempt is a task on it:

- ``on_next`` is called on the loop thread. A consumer must not block it (that stalls every
  stream): :func:`~rxreact.operators.deliver_on`, which the agent puts right behind the
  model, closes the reader's :class:`~rxreact.rx._valve.Valve` instead of blocking when its
  buffer is full, and the reader waits for it between reads.
- Cancellation (dispose, or the watchdog's timeout) cancels the attempt's task, from any
  thread, with ``call_soon_threadsafe``; httpx then closes the connection, which the server
  sees. A dispose after the stream completed does not cancel: the reader finishes draining
  the body (briefly, see :mod:`~rxreact.model.http._read_sse`) so the connection goes back to
  the pool.
- The watchdog and the retry backoff stay on the timer scheduler, as in thread mode, so a
  virtual-time scheduler drives them.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from reactivex import abc

from rxreact.model.http._admission import Admission
from rxreact.model.http._call import CallSettings, ModelCall, Stopped
from rxreact.rx import _valve
from rxreact.rx._fused import NOTHING

__all__ = ["LoopCall", "admission", "io_loop", "run_on_io_loop"]

_T = TypeVar("_T")
_R = TypeVar("_R")

THREAD_NAME = "rxreact-io"

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread_id: int | None = None
_admission: Admission | None = None
_running: set[asyncio.Task[None]] = set()
"""Every attempt task (the loop keeps only weak references to its tasks)."""


def io_loop() -> asyncio.AbstractEventLoop:
    """The process-wide I/O loop, running on its daemon thread (started on first call)."""
    global _loop, _thread_id, _admission
    with _lock:
        if _loop is None:
            _remember_missing_sniffio()
            loop = asyncio.new_event_loop()
            _admission = Admission(loop)
            thread = threading.Thread(target=loop.run_forever, name=THREAD_NAME, daemon=True)
            thread.start()
            _loop, _thread_id = loop, thread.ident
        return _loop


def admission() -> Admission:
    """The I/O loop's :class:`~rxreact.model.http._admission.Admission` (every attempt
    passes it before it sends anything)."""
    if _admission is None:  # set once, with the loop: no lock on every attempt's start
        io_loop()
    assert _admission is not None
    return _admission


def _remember_missing_sniffio() -> None:
    """Make ``import sniffio`` fail at once when the package is not installed.

    httpcore's async locks and events each run ``import sniffio`` (to tell asyncio from
    trio) and fall back to asyncio when it fails. A failed import is not cached: every one
    searches ``sys.path`` again, ~30 µs, several times per request (7 % of the CPU of 1,000
    concurrent runs). A ``None`` in ``sys.modules`` is Python's own record of a module that is
    not there: the import raises ``ImportError`` at once, as it would after the search.
    """
    if "sniffio" not in sys.modules and importlib.util.find_spec("sniffio") is None:
        sys.modules["sniffio"] = None  # type: ignore[assignment]


def on_io_loop() -> bool:
    """Whether the caller runs on the I/O loop's thread (where it must not wait for it)."""
    return _thread_id is not None and threading.get_ident() == _thread_id


def run_on_io_loop(coroutine: Coroutine[Any, Any, _R], timeout: float | None = None) -> _R:
    """Run ``coroutine`` on the I/O loop and wait for its result (not from the loop itself).

    Objects bound to the loop, such as an ``httpx.AsyncClient`` that loop-mode models used,
    are closed this way: ``run_on_io_loop(client.aclose())``.
    """
    if on_io_loop():
        coroutine.close()
        raise RuntimeError("run_on_io_loop() would wait for the loop it runs on")
    return asyncio.run_coroutine_threadsafe(coroutine, io_loop()).result(timeout)


def _forget(task: asyncio.Task[None]) -> None:
    """A finished attempt's task leaves :data:`_running` (one function for every task, where
    ``_running.discard`` made a bound method per task, alive as long as the task)."""
    _running.discard(task)


def _nothing() -> abc.DisposableBase:
    """What a scheduled attempt holds in the task slot: a shared no-op (a ``Disposable()``
    per attempt carried an RLock, alive as long as the attempt)."""
    return NOTHING


class LoopCall(ModelCall[_T]):
    """Each attempt is a task on the I/O loop; a read is aborted by cancelling the task.

    ``attempt(call)`` is a coroutine function; it reads with the call's :attr:`valve` open.
    """

    def __init__(
        self,
        attempt: Callable[[LoopCall[_T]], Coroutine[Any, Any, None]],
        observer: abc.ObserverBase[_T],
        settings: CallSettings,
    ) -> None:
        super().__init__(observer, settings)
        self._attempt = attempt
        self._loop = io_loop()
        self._running: asyncio.Task[None] | None = None
        self._attempts = 0  # numbers the attempts, so a late cancel cannot hit the next one
        self.valve = _valve.Valve(self._loop)
        """Closed by a full consumer; the reader awaits it open between reads."""
        self.draining = False
        """Set by the reader once every event is read: from then on a dispose lets it finish
        reading the end of the body (bounded) instead of cancelling it."""

    def _schedule_attempt(self) -> None:
        self._attempts += 1
        # Disposing before the start needs nothing more: the task sees the flag in _begin.
        # Set before the attempt is scheduled: an attempt that fails at once schedules its
        # retry into the same slot, on the loop, possibly before this line would have run
        # (assigning after it would cancel that retry timer: the stream never ended).
        self._task.replace_with(_nothing)
        self._loop.call_soon_threadsafe(self._start_task, self._attempts)

    def _abort(self) -> None:
        if self._done or self.draining:
            # Completed, or every event read: let the reader drain the rest of the body so
            # that the connection returns to the pool (it stops on its own, quickly). A
            # cancellation there could also land inside httpcore's closing of the response,
            # which does not survive one (the request would stay counted in its pool).
            return
        self._loop.call_soon_threadsafe(self._cancel_task, self._attempts)

    def _start_task(self, number: int) -> None:
        if number == self._attempts and not self._disposed:
            task = self._running = self._loop.create_task(self._run())
            _running.add(task)
            task.add_done_callback(_forget)

    def _cancel_task(self, number: int) -> None:
        task = self._running
        if task is not None and number == self._attempts:
            task.cancel()

    async def _run(self) -> None:
        gate = admission()
        try:
            await gate.enter()  # while the loop runs late, new requests wait their turn here
        except asyncio.CancelledError:
            if self._disposed:  # disposed while waiting: nothing was sent
                return
            raise
        # Admitted. One coroutine for the wait and the attempt: a second one (and its frame)
        # lived as long as the stream.
        task = asyncio.current_task()
        assert task is not None
        valve = self.valve
        valve.attach(task)  # what a full consumer closes while this task emits
        try:
            if not self._begin():
                return
            self.draining = False
            error: Exception | None = None
            try:
                await self._attempt(self)
            except Stopped:
                pass
            except asyncio.CancelledError:
                # Ours (dispose or the watchdog) ends the attempt; anyone else's (the loop
                # shutting down) goes on as a cancellation.
                if not (self._disposed or self._timed_out is not None):
                    raise
            except Exception as exc:
                error = exc
            finally:
                self._running = None
            self._end(error)  # the completion's hand-off still finds the valve
        finally:
            valve.detach(task)
            gate.leave()
