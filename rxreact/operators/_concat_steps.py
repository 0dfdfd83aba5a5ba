from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import SerialDisposable, SingleAssignmentDisposable
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
        "_iterator",
        "_observer",
        "_pending",
        "_running",
        "_scheduler",
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
        self._pending = OrderedSerialDisposable()
        self._running = SerialDisposable()  # the current step's subscription
        self._stopped = False  # the subscriber raised: nothing more passes

    def start(self) -> abc.DisposableBase:
        self._start_next()
        return self  # its own disposable: no CompositeDisposable, list and RLock per run

    def dispose(self) -> None:
        self._pending.dispose()
        self._running.dispose()

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
        self._running.dispose()
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
        # Set before subscribing: the step's completion schedules the next action, which
        # replaces ``running`` in turn, so the two assignments never cross.
        inner = SingleAssignmentDisposable()
        self._running.disposable = inner
        inner.disposable = subscribe_fused(
            step, self._on_next, self._on_error, self._start_next, self._subscribe_on
        )
