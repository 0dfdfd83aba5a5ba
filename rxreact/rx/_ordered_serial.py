"""``OrderedSerialDisposable``: a serial disposable that a late assignment cannot corrupt.

RxPY's operators chain work as ``serial.disposable = scheduler.schedule(action)``: the action
is handed to the scheduler first and its handle is stored second. On a multi-threaded
scheduler the action can run in between, finish, and schedule its own successor, whose
handle is stored first; when the preempted thread then stores the older handle,
``SerialDisposable`` disposes the newer one, and the successor (the next step of a run, a
retry, the rest of a script) silently never runs. ``reactivex.concat_with_iterable``,
``reactivex.concat`` and ``catch_with_iterable`` all have this shape.

Here every assignment takes a ticket *before* the work is handed over
(:meth:`OrderedSerialDisposable.replace_with`), and an assignment whose ticket is older than
the one held is dropped: its work has already run (the newer ticket exists only because that
work went on), so there is nothing of it left to keep or to cancel.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from reactivex import abc

__all__ = ["OrderedSerialDisposable"]


class OrderedSerialDisposable(abc.DisposableBase):
    """Holds the disposable of the newest piece of work; replacing it disposes the older one.

    Disposing it disposes the held disposable and every one assigned afterwards.

    Args:
        lock: a lock of its owner's to use instead of one of its own (an owner that has one
            already saves a lock per instance: a run holds several of these for its whole
            life, and every garbage collection walks their locks). It is held here only for
            a few assignments, never while anything is started or disposed; the owner must
            not hold it when it calls in (unless the lock is reentrant).
    """

    __slots__ = ("_current", "_disposed", "_held", "_lock", "_tickets")

    def __init__(self, lock: AbstractContextManager[Any] | None = None) -> None:
        self._lock = threading.Lock() if lock is None else lock
        self._tickets = 0
        self._held = 0
        self._current: abc.DisposableBase | None = None
        self._disposed = False

    @property
    def is_disposed(self) -> bool:
        """True once :meth:`dispose` was called."""
        return self._disposed

    def replace_with(self, start: Callable[[], abc.DisposableBase]) -> None:
        """Start a piece of work (``start()`` returns its disposable) and hold it.

        The ticket is taken before ``start`` runs, so work that ``start``'s own work starts
        in turn (on another thread, before ``start`` has even returned) always counts as newer.
        """
        with self._lock:
            self._tickets += 1
            ticket = self._tickets
        disposable = start()
        with self._lock:
            if self._disposed:
                old: abc.DisposableBase | None = disposable
            elif ticket < self._held:
                return  # stale: newer work already replaced it, so this one has run
            else:
                old, self._current, self._held = self._current, disposable, ticket
        if old is not None:
            old.dispose()

    def dispose(self) -> None:
        """Dispose the held disposable, and any assigned from now on."""
        with self._lock:
            if self._disposed:
                return
            self._disposed = True
            current, self._current = self._current, None
        if current is not None:
            current.dispose()
