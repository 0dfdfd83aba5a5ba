from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

from reactivex import Observable, abc
from reactivex.scheduler import CurrentThreadScheduler

from rxreact.rx._fused import Fused, subscribe_fused
from rxreact.rx._ordered_serial import OrderedSerialDisposable

_T = TypeVar("_T")


def concat_steps_(steps: Iterable[Observable[_T]]) -> Observable[_T]:
    def subscribe(
        observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return _Steps(iter(steps), observer, scheduler).start()

    return Fused(subscribe)


class _Steps(abc.DisposableBase, Generic[_T]):
    """One subscription of ``concat_steps``.

    An object, not two closures calling each other: such closures form a reference cycle that
    outlives the subscription, and with it the steps' generator (a whole agent run's state)
    waits for the cycle collector. Here every reference back to this object goes through the
    disposables, which let go when the subscription ends.
    """

    __slots__ = (
        "_current",
        "_ended",
        "_iterator",
        "_lock",
        "_observer",
        "_pending",
        "_scheduler",
        "_step",
        "_stopped",
        "_subscribe_on",
    )

    def __init__(
        self,
        iterator: Iterator[Observable[_T]],
        observer: abc.ObserverBase[_T],
        scheduler: abc.SchedulerBase | None,
    ) -> None:
        self._iterator: Iterator[Observable[_T]] | None = iterator
        self._observer = observer
        self._subscribe_on = scheduler  # what each step is subscribed with
        self._scheduler = scheduler or CurrentThreadScheduler.singleton()
        # The next step's scheduled start. ``reactivex.concat_with_iterable`` keeps it in a
        # SerialDisposable assigned after ``schedule`` returns: a thread preempted there
        # disposed the *following* step, scheduled meanwhile, and the run stopped for good.
        # The current step's subscription, numbered: a plain lock and two fields where a
        # SerialDisposable and a SingleAssignmentDisposable per step carried an RLock each.
        # The pending start shares the lock (neither holds it while calling the other).
        self._lock = threading.Lock()
        self._pending = OrderedSerialDisposable(self._lock)
        self._current: abc.DisposableBase | None = None
        self._step = 0
        self._ended = False  # disposed: a step's subscription is disposed as it comes
        self._stopped = False  # the subscriber raised: nothing more passes

    def start(self) -> abc.DisposableBase:
        self._start_next()
        return self  # its own disposable: no CompositeDisposable, list and RLock per run

    def dispose(self) -> None:
        self._pending.dispose()
        self._dispose_current()

    def _dispose_current(self) -> None:
        with self._lock:
            self._ended = True
            current, self._current = self._current, None
        if current is not None:
            current.dispose()

    def _start_next(self) -> None:
        self._pending.replace_with(lambda: self._scheduler.schedule(self._action))

    def _on_next(self, value: _T) -> None:
        """Pass one value on; an exception the subscriber raises on it ends the sequence.

        It must not climb back into the step: the value may come from a completion (a round's
        ``round_finished``), a tool's thread, a timer or a judge's future, where the step's
        own code has no one left to tell, or through a ``catch`` that would take it for the
        step's failure. Here, the one place every step's values pass, it becomes ``on_error``
        and the step is disposed, whichever step emitted it.
        """
        if self._stopped:
            return
        try:
            self._observer.on_next(value)
        except Exception as error:
            self._fail(error)

    def _on_error(self, error: Exception) -> None:
        if not self._stopped:
            self._stopped = True
            self._observer.on_error(error)

    def _fail(self, error: Exception) -> None:
        self._stopped = True
        self._iterator = None
        self._pending.dispose()
        self._dispose_current()
        self._observer.on_error(error)

    def _action(self, _: abc.SchedulerBase, __: Any = None) -> None:
        iterator = self._iterator
        if self._pending.is_disposed or iterator is None or self._stopped:
            return
        try:
            step = next(iterator)
        except StopIteration:
            self._iterator = None
            self._observer.on_completed()
            return
        except Exception as error:
            self._iterator = None
            self._observer.on_error(error)
            return
        # Numbered before subscribing: the step's completion schedules the next action, which
        # may start the next step before this subscription is stored; a step whose number is
        # no longer the newest (or a subscription disposed meanwhile) is disposed, not stored.
        with self._lock:
            if self._ended:
                return
            self._step += 1
            number = self._step
            previous, self._current = self._current, None
        if previous is not None:
            previous.dispose()  # the finished step's subscription, as SerialDisposable did
        subscription = subscribe_fused(
            step, self._on_next, self._on_error, self._start_next, self._subscribe_on
        )
        with self._lock:
            if not self._ended and self._step == number:
                self._current = subscription
                return
        subscription.dispose()
