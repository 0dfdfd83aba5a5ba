"""Operator fusion: rxreact's own operators subscribe to one another directly.

RxPY's ``Observable.subscribe`` wraps every subscription: an ``AutoDetachObserver`` (with a
``SingleAssignmentDisposable`` and its RLock), a ``Disposable`` with another RLock, bound
methods, two closures and a trampoline check. Between two of rxreact's operators that wrapper
guards nothing the operators do not keep already, and a run holds about seven of them for its
whole life: at a thousand concurrent runs they were a fifth of the live objects every
collection walks. A :class:`Fused` Observable's subscribe function keeps the observer
contract itself: one terminal notification and nothing after it, disposal that stops it.
:func:`subscribe_fused` calls such a function directly and subscribes to anything else the
usual way, so a user's Observable in the chain keeps RxPY's guards. An operator whose
subscription object keeps the contract too (a :class:`Keeper`) is handed over as it is
(:func:`subscribe_observer`), not as three bound methods in one more wrapper.

::

    source (Fused):            --a--b--|
    subscribe_fused(source):   --a--b--|     the same notifications, one wrapper less
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from reactivex import Observable, abc

__all__ = ["NOTHING", "Fused", "Keeper", "Relay", "subscribe_fused", "subscribe_observer"]

_T = TypeVar("_T")

_LOCK_MADE = threading.Lock()


class Fused(Observable[_T]):
    """An Observable whose subscribe function keeps the observer contract itself (see the
    module): rxreact's operators subscribe to it without RxPY's per-subscription wrapper.
    Anyone else subscribes to it as to any Observable."""

    def __init__(
        self,
        subscribe: Callable[[abc.ObserverBase[_T], abc.SchedulerBase | None], abc.DisposableBase],
    ) -> None:
        # Not ``Observable.__init__``: it makes an RLock per Observable that only a few RxPY
        # operators applied to it ever take (``delay``, ``take_while``, ``amb``...); a run
        # holds several of rxreact's Observables for its whole life, and every collection
        # walks their locks. :attr:`lock` makes it when first asked for.
        self._subscribe = subscribe
        # Typed to take any observer: subscribe_fused hands it a _Callbacks or a Keeper, with
        # no ``typing.cast`` (a Python call) per subscription.
        self.fused: Callable[[Any, abc.SchedulerBase | None], abc.DisposableBase] = subscribe

    @property
    def lock(self) -> threading.RLock:
        """``Observable.lock``, made on first use."""
        lock: threading.RLock | None = self.__dict__.get("_lock")
        if lock is None:
            with _LOCK_MADE:  # two threads asking at once get the same lock
                lock = self.__dict__.setdefault("_lock", threading.RLock())
        return lock

    @lock.setter
    def lock(self, lock: threading.RLock) -> None:
        self.__dict__["_lock"] = lock


class Keeper:
    """An observer of rxreact's own that keeps the contract itself: ``on_error`` and
    ``on_completed`` pass at most once between them, and :meth:`ended` says whether one has.

    :func:`subscribe_observer` hands such an observer to a :class:`Fused` source as it is: an
    operator's subscription object subscribed through its three bound methods was wrapped in a
    :class:`_Callbacks`, four more objects per operator for the stream's whole life.
    """

    __slots__ = ()

    on_next: Callable[[Any], None]

    def ended(self) -> bool:
        """True once ``on_error`` or ``on_completed`` has passed."""
        raise NotImplementedError

    def on_error(self, error: Exception) -> None:
        raise NotImplementedError

    def on_completed(self) -> None:
        raise NotImplementedError


class Relay(Keeper):
    """A :class:`Keeper` that passes its terminal notification on to ``_observer``, once, and
    nothing after it (``stopped``); a subclass says what ``on_next`` does."""

    __slots__ = ("_observer", "stopped")

    def __init__(self, observer: abc.ObserverBase[Any]) -> None:
        self._observer = observer
        self.stopped = False

    def ended(self) -> bool:
        return self.stopped

    def on_error(self, error: Exception) -> None:
        if not self.stopped:
            self.stopped = True
            self._observer.on_error(error)

    def on_completed(self) -> None:
        if not self.stopped:
            self.stopped = True
            self._observer.on_completed()


class _Callbacks(Keeper):
    """An observer made of three callables. ``on_next`` is an attribute, not a method, so that
    calling it is one call (``AutoDetachObserver`` adds a method call and a check per
    notification); the terminal notifications, once each, pass at most one of them, and
    record it for :func:`subscribe_fused`."""

    __slots__ = ("_on_completed", "_on_error", "on_next", "stopped")

    def __init__(
        self,
        on_next: Callable[[Any], None],
        on_error: Callable[[Exception], None],
        on_completed: Callable[[], None],
    ) -> None:
        self.on_next = on_next
        self._on_error = on_error
        self._on_completed = on_completed
        self.stopped = False

    def ended(self) -> bool:
        return self.stopped

    def on_error(self, error: Exception) -> None:
        if not self.stopped:
            self.stopped = True
            self._on_error(error)

    def on_completed(self) -> None:
        if not self.stopped:
            self.stopped = True
            self._on_completed()


class _Nothing(abc.DisposableBase):
    __slots__ = ()

    def dispose(self) -> None:
        pass


NOTHING: abc.DisposableBase = _Nothing()
"""A disposable with nothing to dispose of, shared (``Disposable()`` makes an RLock each)."""


def subscribe_fused(
    source: Observable[_T],
    on_next: Callable[[_T], None],
    on_error: Callable[[Exception], None],
    on_completed: Callable[[], None],
    scheduler: abc.SchedulerBase | None = None,
) -> abc.DisposableBase:
    """Subscribe the three callbacks to ``source``: directly when it is :class:`Fused` (an
    exception its subscribe function raises goes to ``on_error``, or, when the source had
    already ended, is raised here, as RxPY's ``subscribe`` does), else through
    ``source.subscribe``."""
    if type(source) is Fused:
        # An operator passing its own observer's callbacks straight through: that observer
        # keeps the contract already, and a wrapper around it would only be three more
        # objects for the run's whole life.
        observer: Any = getattr(on_error, "__self__", None)
        if not (
            type(observer) is _Callbacks
            and on_next is observer.on_next
            and getattr(on_completed, "__self__", None) is observer
        ):
            observer = _Callbacks(on_next, on_error, on_completed)
        try:
            return source.fused(observer, scheduler)
        except Exception as error:
            if observer.stopped:
                raise  # it had ended already: the subscriber's caller hears it, as in RxPY
            observer.on_error(error)
            return NOTHING
    return source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)


def subscribe_observer(
    source: Observable[_T],
    observer: abc.ObserverBase[_T] | Keeper,
    scheduler: abc.SchedulerBase | None = None,
) -> abc.DisposableBase:
    """Subscribe ``observer`` to ``source``: a :class:`Keeper` to a :class:`Fused` source as it
    is (an exception the subscribe function raises as :func:`subscribe_fused` says), anything
    else through its three callbacks, as :func:`subscribe_fused` does."""
    if type(source) is Fused and isinstance(observer, Keeper):
        try:
            return source.fused(observer, scheduler)
        except Exception as error:
            if observer.ended():
                raise
            observer.on_error(error)
            return NOTHING
    return subscribe_fused(
        source, observer.on_next, observer.on_error, observer.on_completed, scheduler
    )
