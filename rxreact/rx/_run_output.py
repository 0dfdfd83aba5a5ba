"""``RunOutput``: the last observer of a run, where its events leave for the subscriber.

It counts the events, stamps each with its ``seq`` (the count), and is the run's watchdog: a
run whose count has not moved for ``stall_timeout`` seconds ends with
:class:`~rxreact.RunStalledError` instead of waiting forever. The model's and the tools' own
timeouts end a silent run long before that; the watchdog is the net under everything else (a
lost scheduled action, a backend call that never returns). One plain counter per event, no
lock and no timer on the event path: the timer looks at the counter, and re-arms itself when
it moved.

Why ``seq`` is stamped here: a run's events are made on many threads (model events on the
agent's scheduler, tool events on the tools' threads, in completion order), so construction
order is not delivery order. This observer is the one serialized point every event passes (Rx
never overlaps its ``on_next`` calls), and its order is the order every subscriber sees.

Why writing ``event.__dict__["seq"]`` on a frozen model is safe: pydantic keeps field values in
the instance ``__dict__`` (``frozen`` only blocks ``__setattr__``), and ``model_dump``, JSON,
``==`` and ``hash`` all read it there; every event is a fresh object its run built for this one
emission (nothing caches or shares events), and nothing has seen or hashed it before it gets
here. It costs one dict store per event; an ``ops.map`` layer or ``model_copy(update=...)``
(a second model per chunk, ~7 µs) cost more.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from reactivex import Observable, abc

from rxreact.errors import RunStalledError
from rxreact.rx._fused import Keeper, subscribe_fused, subscribe_observer
from rxreact.rx._ordered_serial import OrderedSerialDisposable

__all__ = ["RunOutput", "Waiting"]


class Waiting(Protocol):
    """What the watchdog asks before it ends a quiet run (a run's ``Approvals``)."""

    @property
    def waiting(self) -> int:
        """Tool calls waiting for a person's decision now."""
        ...


def _raise(error: Exception) -> None:
    raise error


class RunOutput(Keeper, abc.ObserverBase[Any], abc.DisposableBase):
    """Forwards a run's notifications to the subscriber; ends the run if it stalls.

    ``stalled`` -> ``on_error(RunStalledError)`` between ``stall_timeout`` and twice that
    after the last event (the timer checks the count once per ``stall_timeout``). A run whose
    ``waiting.waiting`` is positive (tool calls waiting for approval) is never stalled.
    """

    def __init__(
        self,
        on_next: Callable[[Any], None],
        on_error: Callable[[Exception], None] | None,
        on_completed: Callable[[], None] | None,
        scheduler: abc.SchedulerBase,
        stall_timeout: float | None,
        waiting: Waiting | None = None,
        origin: Any = None,
    ) -> None:
        self.count = 0
        """Events delivered so far."""
        self._on_next = on_next
        self._on_error = on_error or _raise
        self._on_completed = on_completed or (lambda: None)
        self._scheduler = scheduler
        self._stall_timeout = stall_timeout
        # Its ``waiting`` > 0: the run waits for a person (approval), not stalled. An object
        # read when the timer fires, not a callable: a lambda per run is three more objects.
        self._waiting = waiting
        self._lock = threading.Lock()
        self._seen = 0  # the count when the watchdog's timer was last armed
        self._over = False
        self._timer = OrderedSerialDisposable(self._lock)  # never called with the lock held
        self._subscription: abc.DisposableBase | None = None
        self._origin = origin  # marks the run's own events with origin.agent.name

    def follow(
        self, events: Observable[Any], scheduler: abc.SchedulerBase | None
    ) -> abc.DisposableBase:
        """Subscribe to the run's ``events`` and :meth:`watch` the run; returns this, to
        dispose both.

        The events go in through :meth:`on_next`, or, for a run whose agent is named (or may
        hand off), a step that first writes that name on the run's own events, as ``seq`` is
        written: chosen once, so a run of the default agent pays nothing for it. That run
        subscribes this object as it is (a :class:`~rxreact.rx._fused.Keeper`), not its three
        bound methods in a wrapper.
        """
        if self._origin is None:
            return self.watch(subscribe_observer(events, self, scheduler))
        return self.watch(
            subscribe_fused(events, self._marked, self.on_error, self.on_completed, scheduler)
        )

    def _marked(self, value: Any) -> None:
        if not value.path:  # an agent tool's events carry their own run's name already
            value.__dict__["agent"] = self._origin.agent.name
        self.on_next(value)

    def on_next(self, value: Any) -> None:
        """Count, stamp ``seq`` and forward one event."""
        self.count += 1
        value.__dict__["seq"] = self.count
        self._on_next(value)

    def ended(self) -> bool:
        """True once the run's end was forwarded (or the run was disposed)."""
        return self._over

    def on_error(self, error: Exception) -> None:
        """Forward the run's error (once)."""
        if self._end():
            self._detach()
            self._on_error(error)

    def on_completed(self) -> None:
        """Forward the run's completion (once)."""
        if self._end():
            self._detach()
            self._on_completed()

    def watch(self, subscription: abc.DisposableBase) -> abc.DisposableBase:
        """Start watching the run subscribed as ``subscription``; returns this, to dispose both."""
        with self._lock:
            over = self._over
            if not over:
                self._subscription = subscription
        if over:  # it ended during subscribe: nothing to watch, and nothing to keep
            subscription.dispose()
            return self
        if self._stall_timeout is not None:
            self._arm()
        return self

    def _detach(self) -> None:
        """The run ended: dispose of its subscription now and let go of it. The run's own
        operators are fused (``rxreact.rx._fused``): no ``AutoDetachObserver`` does this for
        them, and holding the subscription would keep reference cycles (this -> subscription
        -> its observers -> this) that only the garbage collector frees, and with them the
        whole run's state: at thousands of runs, heap that every collection walks."""
        with self._lock:
            subscription, self._subscription = self._subscription, None
        if subscription is not None:
            subscription.dispose()

    def dispose(self) -> None:
        """Cancel the run and stop watching it."""
        self._end()
        if self._subscription is not None:
            self._subscription.dispose()

    def _end(self) -> bool:
        with self._lock:
            if self._over:
                return False
            self._over = True
        self._timer.dispose()
        return True

    def _arm(self) -> None:
        # The count now, and bound methods instead of a closure: the timer holds one method
        # object per run, not a function, its cells and their tuple (objects every garbage
        # collection walks, at thousands of live runs).
        self._seen = self.count
        self._timer.replace_with(self._schedule_check)

    def _schedule_check(self) -> abc.DisposableBase:
        assert self._stall_timeout is not None
        return self._scheduler.schedule_relative(self._stall_timeout, self._check)

    def _check(self, _: abc.SchedulerBase, __: Any = None) -> None:
        if self.count != self._seen or (self._waiting is not None and self._waiting.waiting > 0):
            self._arm()
            return
        if not self._end():
            return
        self._detach()
        self._on_error(
            RunStalledError(
                f"the run delivered no event for {self._stall_timeout:g} s (stall_timeout)"
            )
        )
