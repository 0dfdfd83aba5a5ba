"""The runs of this process waiting for a lease, per memory and conversation, oldest first."""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from reactivex import abc
from reactivex.disposable import Disposable

__all__ = ["waiters"]

log = logging.getLogger(__name__)


class _Waiter(Protocol):
    def wake(self) -> None:
        """Try for the lease now (it may have been released)."""


class _Waiters:
    """The runs of this process waiting for a conversation of a memory, oldest first.

    Only the oldest waiter (the head) asks the store again on a timer; the others sleep until
    they become the head, so a thousand queued runs make one poller, not a thousand. A release
    made in this process wakes the head at once; so does one made elsewhere when the memory
    announces releases (``memory.releases()``, e.g. Redis pub/sub), else the head's poll finds
    it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: dict[tuple[int, str], dict[_Waiter, None]] = {}
        self._watches: dict[tuple[int, str], abc.DisposableBase] = {}

    def add(self, key: tuple[int, str], waiter: _Waiter) -> None:
        with self._lock:
            self._waiting.setdefault(key, {})[waiter] = None

    def watch(self, key: tuple[int, str], memory: Any) -> None:
        """Wake the key's head on each release the memory announces, while the key has waiters.

        Called once a waiter was refused, not before: an uncontended run pays nothing for it.
        """
        releases = getattr(memory, "releases", None)
        if not callable(releases):
            return
        pending = Disposable()
        with self._lock:
            queue = self._waiting.get(key)
            if queue is None or key in self._watches:
                return
            self._watches[key] = pending
        conversation_id = key[1]
        try:
            watch = releases().subscribe(
                lambda released: self.wake(key) if released == conversation_id else None,
                lambda error: log.debug("release notices failed: %s", error),
            )
        except Exception as error:  # no notices: the head's polling still finds the release
            log.debug("release notices failed: %s", error)
            watch = Disposable()
        with self._lock:
            keep = self._waiting.get(key) is queue and self._watches.get(key) is pending
            if keep:
                self._watches[key] = watch
        if not keep:  # the waiters left meanwhile
            watch.dispose()

    def is_head(self, key: tuple[int, str], waiter: _Waiter) -> bool:
        with self._lock:
            return next(iter(self._waiting.get(key, ())), None) is waiter

    def remove(self, key: tuple[int, str], waiter: _Waiter) -> None:
        """Forget ``waiter``; if it was the head, the next one takes over the polling."""
        with self._lock:
            queue = self._waiting.get(key)
            if queue is None or waiter not in queue:
                return
            was_head = next(iter(queue)) is waiter
            del queue[waiter]
            watch = None
            if not queue:
                del self._waiting[key]
                watch = self._watches.pop(key, None)
            head = next(iter(queue), None) if was_head else None
        if watch is not None:
            watch.dispose()
        if head is not None:
            head.wake()

    def wake(self, key: tuple[int, str]) -> None:
        """The conversation was released here: the head tries at once."""
        with self._lock:
            head = next(iter(self._waiting.get(key, ())), None)
        if head is not None:
            head.wake()


waiters = _Waiters()
"""The one registry of this process."""
