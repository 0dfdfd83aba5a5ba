from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import Disposable, SerialDisposable, SingleAssignmentDisposable

from rxreact.errors import ChatMemoryError, ConversationBusyError, RxReactError
from rxreact.memory.base import ChatMemory
from rxreact.memory.lease import Lease
from rxreact.model.retry_policy import Backoff
from rxreact.scheduling import timer_scheduler

_T = TypeVar("_T")
log = logging.getLogger(__name__)

OnBusy = Literal["queue", "reject"]


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
        self._waiting: dict[tuple[int, str], dict[_Holding[Any], None]] = {}
        self._watches: dict[tuple[int, str], abc.DisposableBase] = {}

    def add(self, key: tuple[int, str], waiter: _Holding[Any]) -> None:
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
        watch = releases().subscribe(
            lambda released: self.wake(key) if released == conversation_id else None,
            lambda error: log.debug("release notices failed: %s", error),
        )
        with self._lock:
            keep = self._waiting.get(key) is queue and self._watches.get(key) is pending
            if keep:
                self._watches[key] = watch
        if not keep:  # the waiters left meanwhile
            watch.dispose()

    def is_head(self, key: tuple[int, str], waiter: _Holding[Any]) -> bool:
        with self._lock:
            return next(iter(self._waiting.get(key, ())), None) is waiter

    def remove(self, key: tuple[int, str], waiter: _Holding[Any]) -> None:
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


_waiters = _Waiters()


@dataclass(frozen=True)
class _Spec(Generic[_T]):
    memory: ChatMemory
    conversation_id: str
    body: Callable[[Lease], Observable[_T]]
    owner: str
    ttl: float
    on_busy: OnBusy
    busy_timeout: float | None
    poll: Backoff


def with_lease_(
    memory: ChatMemory,
    conversation_id: str,
    body: Callable[[Lease], Observable[_T]],
    *,
    owner: str,
    ttl: float,
    on_busy: OnBusy,
    busy_timeout: float | None,
    poll: Backoff,
) -> Observable[_T]:
    spec = _Spec(memory, conversation_id, body, owner, ttl, on_busy, busy_timeout, poll)

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return _Holding(spec, observer, scheduler).start()

    return Observable(subscribe)


class _Holding(Generic[_T]):
    """One subscription: waiting for the lease, then holding it while the body runs.

    Attempts and renewals are timers on the scheduler: a waiting subscription holds no thread.
    The lock guards the state the timers, wake-ups and dispose share; the body's events never
    take it (a slow subscriber must not hold up a renewal).
    """

    def __init__(
        self,
        spec: _Spec[_T],
        observer: abc.ObserverBase[_T],
        scheduler: abc.SchedulerBase | None,
    ) -> None:
        self.spec = spec
        self.observer = observer
        self.subscribe_scheduler = scheduler
        self.scheduler = timer_scheduler(scheduler)
        self.key = (id(spec.memory), spec.conversation_id)
        self.lock = threading.RLock()
        self.timer = SerialDisposable()  # the next attempt, or the next renewal
        self.body = SingleAssignmentDisposable()
        self.lease: Lease | None = None
        self.done = False
        self.attempting = False
        self.woken = False  # a release was seen while an attempt ran: try again at once
        self.retries = 0
        self.started = self.scheduler.now

    def start(self) -> abc.DisposableBase:
        if self.spec.on_busy == "queue":
            _waiters.add(self.key, self)
        with self.lock:
            self.later(0.0, self.attempt)
        return Disposable(self.dispose)

    def later(self, seconds: float, action: Callable[..., None]) -> None:
        """Make ``action`` the one pending timer (call with the lock held).

        Every timed action takes the lock first, so it cannot run (and schedule its own
        successor) before this assignment is done: the assignment never replaces, and so
        cancels, a newer timer.
        """
        self.timer.disposable = self.scheduler.schedule_relative(seconds, action)

    # -- waiting ------------------------------------------------------------------------------

    def wake(self) -> None:
        with self.lock:
            if self.done or self.lease is not None:
                return
            self.retries = 0  # a fresh start: poll quickly again if this attempt fails
            if self.attempting:
                self.woken = True
                return
            self.later(0.0, self.attempt)

    def attempt(self, *_: Any) -> None:
        spec = self.spec
        with self.lock:
            if self.done or self.lease is not None or self.attempting:
                self.woken = self.woken or self.attempting
                return
            self.attempting, self.woken = True, False
        try:
            lease = spec.memory.try_acquire(spec.conversation_id, spec.owner, spec.ttl)
        except Exception as error:
            self.fail(_memory_error(error, "take the conversation's lease"))
            return
        with self.lock:
            self.attempting = False
            refused = None if self.done or lease is not None else self.wait_more()
            if not self.done and lease is not None:
                self.lease = lease
                self.later(spec.ttl / 3, self.renew)
        if refused is not None:
            self.fail(refused)
        elif lease is None and spec.on_busy == "queue":
            _waiters.watch(self.key, spec.memory)
        elif lease is not None and self.lease is not lease:  # disposed meanwhile
            self.release(lease)
        elif lease is not None:
            _waiters.remove(self.key, self)
            # The body's events go straight to the observer: no layer, no lock per event.
            self.body.disposable = spec.body(lease).subscribe(
                self.observer.on_next,
                self.on_error,
                self.on_completed,
                scheduler=self.subscribe_scheduler,
            )

    def wait_more(self) -> ConversationBusyError | None:
        """After a refused attempt (lock held): the error to end with, or None when the next
        attempt is scheduled."""
        spec = self.spec
        if spec.on_busy == "reject":
            return _busy(spec, "another run is in progress (on_busy='reject')")
        left = None
        if spec.busy_timeout is not None:
            left = spec.busy_timeout - (self.scheduler.now - self.started).total_seconds()
            if left <= 0:
                return _busy(spec, f"still busy after waiting {spec.busy_timeout:g} s")
        delay: float | None = None  # not the head: sleep until woken (or the deadline)
        if self.woken:
            delay = 0.0
        elif _waiters.is_head(self.key, self):
            delay = spec.poll.delay(self.retries)
            self.retries += 1
        if left is not None:
            delay = left if delay is None else min(delay, left)
        if delay is not None:
            self.later(delay, self.attempt)
        return None

    # -- holding ------------------------------------------------------------------------------

    def renew(self, *_: Any) -> None:
        with self.lock:
            lease = self.lease
            if self.done or lease is None:
                return
        try:
            kept = self.spec.memory.renew(lease)
        except Exception:
            # A passing failure of the store: the next tick tries again, and if the lease was
            # lost meanwhile the fenced commit refuses the turn anyway.
            log.warning("could not renew the lease on %r", lease.conversation_id, exc_info=True)
            kept = True
        if not kept:
            # Lost (expired while this process stalled, then taken over). Ending the run from
            # this timer would race the body's own events; the body's fenced commit is refused
            # instead, through its serialized path, and nothing is written.
            log.info("the lease on %r was lost: its commit will be refused", lease.conversation_id)
            return
        with self.lock:
            if not self.done:
                self.later(self.spec.ttl / 3, self.renew)

    def on_error(self, error: Exception) -> None:
        if self.finish():
            self.observer.on_error(error)

    def on_completed(self) -> None:
        if self.finish():
            self.observer.on_completed()

    # -- ending -------------------------------------------------------------------------------

    def fail(self, error: Exception) -> None:
        if self.finish():
            self.observer.on_error(error)

    def dispose(self) -> None:
        self.finish()

    def finish(self) -> bool:
        """End the subscription once: stop timers and body, release the lease, wake waiters.

        The lease is released before the observer hears the end, so a run started from its
        ``on_completed`` finds the conversation free. False when it had ended already.
        """
        with self.lock:
            if self.done:
                return False
            self.done = True
            lease = self.lease
        _waiters.remove(self.key, self)
        self.timer.dispose()
        self.body.dispose()
        if lease is not None:
            self.release(lease)
        return True

    def release(self, lease: Lease) -> None:
        try:
            self.spec.memory.release(lease)
        except Exception:
            # The lease then ends at its expiry: later runs wait one ttl at most.
            log.warning("could not release the lease on %r", lease.conversation_id, exc_info=True)
        _waiters.wake(self.key)


def _busy(spec: _Spec[Any], why: str) -> ConversationBusyError:
    return ConversationBusyError(
        f"conversation {spec.conversation_id!r} is busy: {why}", spec.conversation_id
    )


def _memory_error(error: Exception, action: str) -> RxReactError:
    if isinstance(error, RxReactError):
        return error
    message = f"could not {action}: {error}"
    mapped = ChatMemoryError(message)
    mapped.__cause__ = error
    return mapped
