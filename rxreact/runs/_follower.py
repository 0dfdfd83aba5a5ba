"""A follower of a run read from a shared log (Redis or SQLite): a cursor, a bounded inbox,
delivery on its own scheduler. The log's reader thread fills inboxes; followers empty them."""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Protocol

from reactivex import abc

from rxreact.events import AgentEvent
from rxreact.runs._entries import End

__all__ = ["INBOX", "Follower", "FollowerSet", "Item", "Reader"]

INBOX = 1024
"""Undelivered events at which a follower is left out of reads until it drains."""

Item = AgentEvent | End | Exception
"""What a follower delivers: an event, the run's end, or a failure to follow it."""


class Reader(Protocol):
    """What fills followers' inboxes: the Redis hub, or the SQLite log's reader thread."""

    def remove(self, follower: Follower) -> None: ...

    def wake(self) -> None: ...


class FollowerSet:
    """What every log's reader thread does alike with its followers (a set under its lock):
    ``add`` starts the thread if need be, then wakes it to read the new follower's run;
    ``remove`` drops one. A reader sets ``_lock`` and ``_followers`` and gives
    ``ensure_started`` and ``wake``."""

    _lock: threading.Lock
    _followers: set[Follower]

    def ensure_started(self) -> None:
        raise NotImplementedError

    def wake(self) -> None:
        raise NotImplementedError

    def add(self, follower: Follower) -> None:
        self.ensure_started()
        with self._lock:
            self._followers.add(follower)
        self.wake()

    def remove(self, follower: Follower) -> None:
        with self._lock:
            self._followers.discard(follower)


class Follower:
    """One subscriber of a run read from a shared log: cursor, inbox, delivery on its scheduler."""

    def __init__(
        self,
        hub: Reader,
        run_id: str,
        after: int,
        observer: abc.ObserverBase[AgentEvent],
        scheduler: abc.SchedulerBase,
    ) -> None:
        self.hub = hub
        self.run_id = run_id
        self.cursor = after  # the last seq handed to the inbox (hub thread only)
        self.checked_at = float("-inf")  # when the hub last checked the run is alive
        self.seen_running = False  # a check found the run running (hub thread only)
        self.missing_since: float | None = None  # when a check first found no owner beating
        self.inbox: deque[Item] = deque()
        self.lock = threading.Lock()
        self.starved = False
        self.finished = False
        self._draining = False
        self._observer = observer
        self._scheduler = scheduler

    def push(self, items: list[Item]) -> None:
        """Hand entries (or a failure) over; called by the hub thread."""
        with self.lock:
            if self.finished:
                return
            self.inbox.extend(items)
            if self._draining:
                return
            self._draining = True
        # Not kept for disposal: a drain after dispose() finds ``finished`` and returns.
        self._scheduler.schedule(self._drain)

    def wants_more(self) -> bool:
        """Room in the inbox (else it is starved until it drains); hub thread."""
        with self.lock:
            if self.finished:
                return False
            if len(self.inbox) >= INBOX:
                self.starved = True
                return False
            return True

    def dispose(self) -> None:
        with self.lock:
            self.finished = True
            self.inbox.clear()
        self.hub.remove(self)

    def _drain(self, _: abc.SchedulerBase, __: Any = None) -> None:
        observer = self._observer
        while True:
            with self.lock:
                if self.finished or not self.inbox:
                    self._draining = False
                    return
                batch = list(self.inbox)
                self.inbox.clear()
                wake, self.starved = self.starved, False
            if wake:
                self.hub.wake()
            for item in batch:
                if isinstance(item, End | Exception):
                    with self.lock:
                        if self.finished:
                            return
                        self.finished = True
                    self.hub.remove(self)
                    error = item.error if isinstance(item, End) else item
                    if error is None:
                        observer.on_completed()
                    else:
                        observer.on_error(error)
                    return
                if self.finished:
                    return
                try:
                    observer.on_next(item)
                except Exception as error:
                    # The subscriber raised: this follower ends with it (the run goes on);
                    # escaping, it would stop the drain and leave the follower waiting forever.
                    self.dispose()
                    observer.on_error(error)
                    return
