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
from rxreact.operators._lease_waiters import waiters as _waiters
from rxreact.scheduling import timer_scheduler

_T = TypeVar("_T")
log = logging.getLogger(__name__)

OnBusy = Literal["queue", "reject"]


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
    take_over: Lease | None
    hold: LeaseHold | None


class LeaseHold:
    """A handle on the lease a ``with_lease`` subscription holds, for whoever runs its body.

    :meth:`hold` changes the ttl the lease is renewed with while it is held: a run that waits
    for days with no process working on it (parked until a person approves a call) keeps its
    conversation leased that long, so nothing else starts on it meanwhile.
    """

    __slots__ = ("_holding",)

    def __init__(self) -> None:
        self._holding: _Holding[Any] | None = None

    def hold(self, ttl: float | None) -> None:
        """Renew with ``ttl`` seconds from now on (at once, and at each renewal); ``None``:
        back to the subscription's own ttl. No-op while no lease is held; a lease found lost
        is not renewed (the body's fenced commit will be refused). Raises what the memory's
        ``renew`` raises."""
        holding = self._holding
        if holding is not None:
            holding.hold(ttl)


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
    take_over: Lease | None = None,
    hold: LeaseHold | None = None,
) -> Observable[_T]:
    spec = _Spec(
        memory, conversation_id, body, owner, ttl, on_busy, busy_timeout, poll, take_over, hold
    )

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return _Holding(spec, observer, scheduler).start()

    return Observable(subscribe)


class _Holding(Generic[_T]):
    """One subscription: waiting for the lease, then holding it while the body runs.

    Attempts and renewals are timers on the scheduler: a waiting subscription holds no thread.
    The lock guards the state the timers, wake-ups and dispose share; the body's events never
    take it (a slow subscriber must not hold up a renewal). Renewals themselves are serialized
    by their own lock, so one made with an older ttl never lands after one with a newer ttl.
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
        self.take_over = spec.take_over  # tried once, by the first attempt
        self.held_ttl: float | None = None  # LeaseHold.hold's ttl, in place of spec.ttl
        self.renewing = threading.Lock()

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
            lease = self.hand_over()
            if lease is None:
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
            if spec.hold is not None:
                spec.hold._holding = self
            try:
                # The body's events go straight to the observer: no layer, no lock per event.
                self.body.disposable = spec.body(lease).subscribe(
                    self.observer.on_next,
                    self.fail,
                    self.on_completed,
                    scheduler=self.subscribe_scheduler,
                )
            except Exception as error:
                # Raised on this timer's thread, it would reach no one and keep the lease
                # until its ttl: a body that cannot start ends the run, and gives it back.
                self.fail(error)

    def hand_over(self) -> Lease | None:
        """The first attempt's try to take over ``take_over`` (a stopped owner's lease) at
        once; None when there is none to take, it was granted again since, or the memory
        cannot hand leases over (then the run waits for the lease like any other)."""
        spec, lease = self.spec, self.take_over
        self.take_over = None
        hand_over = getattr(spec.memory, "hand_over", None)
        if lease is None or not callable(hand_over):
            return None
        if lease.conversation_id != spec.conversation_id:
            return None
        successor: Lease | None = hand_over(lease, spec.owner, spec.ttl)
        return successor

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

    def hold(self, ttl: float | None) -> None:
        """Renew with ``ttl`` (None: ``spec.ttl``) from now on, starting now, on this thread;
        a failure of the store is raised here (the caller relies on the longer hold)."""
        with self.lock:
            if self.done or self.lease is None:
                return
            self.held_ttl = ttl
        self.renew(quiet=False)

    def renew(self, *_: Any, quiet: bool = True) -> None:
        with self.renewing:
            with self.lock:
                lease, ttl = self.lease, self.held_ttl
                if self.done or lease is None:
                    return
            if ttl is not None:  # every backend extends by the ttl of the lease it is given
                lease = lease.model_copy(update={"ttl": ttl})
            try:
                kept = self.spec.memory.renew(lease)
            except Exception:
                if not quiet:
                    raise
                # A passing failure of the store: the next tick tries again, and if the lease
                # was lost meanwhile the fenced commit refuses the turn anyway.
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
                # Every third of the shorter ttl: a held lease is renewed at least as often
                # as usual, and never less often than its own ttl needs.
                self.later(min(self.spec.ttl, ttl or self.spec.ttl) / 3, self.renew)

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
        hold = self.spec.hold
        if hold is not None and hold._holding is self:
            hold._holding = None
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
