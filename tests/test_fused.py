"""Operator fusion (``rxreact.rx._fused``): rxreact's operators subscribe to one another without
RxPY's per-subscription wrapper, and keep what that wrapper guaranteed themselves: an error
raised in subscribe reaches ``on_error``, nothing passes after a terminal notification, and
a run's subscription is disposed when the run ends."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from reactivex import abc
from reactivex.disposable import Disposable
from reactivex.observer.autodetachobserver import AutoDetachObserver
from reactivex.scheduler import ImmediateScheduler
from reactivex.subject import Subject

from rxreact.agent.round import RoundState
from rxreact.model.chunks import ChatChunk
from rxreact.operators import process_chunk
from rxreact.rx._fused import Fused, Keeper, subscribe_fused, subscribe_observer
from rxreact.rx._run_output import RunOutput


class Log(abc.ObserverBase[Any]):
    def __init__(self) -> None:
        self.seen: list[Any] = []

    def on_next(self, value: Any) -> None:
        self.seen.append(value)

    def on_error(self, error: Exception) -> None:
        self.seen.append(f"error {error}")

    def on_completed(self) -> None:
        self.seen.append("completed")


def test_a_fused_source_gets_the_callbacks_directly() -> None:
    observers: list[Any] = []

    def subscribe(observer: abc.ObserverBase[int], _: Any = None) -> abc.DisposableBase:
        observers.append(observer)
        observer.on_next(1)
        observer.on_completed()
        return Disposable()

    log = Log()
    subscribe_fused(Fused(subscribe), log.on_next, log.on_error, log.on_completed)
    assert log.seen == [1, "completed"]
    assert not isinstance(observers[0], AutoDetachObserver)


def test_anyone_else_subscribes_to_a_fused_source_as_usual() -> None:
    def subscribe(observer: abc.ObserverBase[int], _: Any = None) -> abc.DisposableBase:
        observer.on_next(1)
        observer.on_completed()
        observer.on_next(2)  # a contract breach: RxPY's wrapper drops it for a user
        return Disposable()

    log = Log()
    Fused(subscribe).subscribe(log)
    assert log.seen == [1, "completed"]


def test_a_fused_source_makes_its_lock_only_when_an_rxpy_operator_asks() -> None:
    def subscribe(observer: abc.ObserverBase[int], _: abc.SchedulerBase | None) -> Any:
        for value in (1, 2, 3):
            observer.on_next(value)
        observer.on_completed()
        return Disposable()

    source: Fused[int] = Fused(subscribe)
    assert "_lock" not in source.__dict__  # a run's Observables carry no RLock until asked
    log = Log()
    source.pipe(reactivex.operators.take_while(lambda v: v < 3)).subscribe(log)  # takes .lock
    assert log.seen == [1, 2, "completed"]
    assert source.lock is source.lock  # made once, then kept
    with source.lock:
        pass


def test_an_observers_own_callbacks_passed_through_are_not_wrapped_again() -> None:
    observers: list[Any] = []

    def inner(observer: abc.ObserverBase[int], _: abc.SchedulerBase | None) -> Any:
        observers.append(observer)
        observer.on_next(1)
        observer.on_completed()
        observer.on_completed()  # a breach: the one observer still passes one end only
        return Disposable()

    def outer(observer: abc.ObserverBase[int], scheduler: abc.SchedulerBase | None) -> Any:
        observers.append(observer)
        return subscribe_fused(
            Fused(inner), observer.on_next, observer.on_error, observer.on_completed, scheduler
        )

    seen: list[Any] = []
    subscribe_fused(Fused(outer), seen.append, seen.append, lambda: seen.append("|"))
    assert observers[0] is observers[1]
    assert seen == [1, "|"]


def test_an_error_raised_in_a_fused_subscribe_goes_to_on_error() -> None:
    def subscribe(observer: abc.ObserverBase[int], _: Any = None) -> abc.DisposableBase:
        raise ValueError("broken")

    log = Log()
    disposable = subscribe_fused(Fused(subscribe), log.on_next, log.on_error, log.on_completed)
    disposable.dispose()
    assert log.seen == ["error broken"]


@pytest.mark.parametrize("end", ["completed", "error"])
def test_a_fused_subscribe_that_raises_after_its_end_raises_to_the_subscriber(end: str) -> None:
    # As RxPY's subscribe does: the end went out already, so the error cannot follow it.
    def subscribe(observer: abc.ObserverBase[int], _: Any = None) -> abc.DisposableBase:
        if end == "completed":
            observer.on_completed()
        else:
            observer.on_error(KeyError("first"))
        raise ValueError("after the end")

    log = Log()
    with pytest.raises(ValueError, match="after the end"):
        subscribe_fused(Fused(subscribe), log.on_next, log.on_error, log.on_completed)
    assert log.seen == (["completed"] if end == "completed" else ["error 'first'"])


def test_a_fused_source_passes_one_end_only() -> None:
    def subscribe(observer: abc.ObserverBase[int], _: Any = None) -> abc.DisposableBase:
        observer.on_next(1)
        observer.on_error(ValueError("end"))
        observer.on_completed()  # contract breaches: neither reaches the subscriber
        observer.on_error(ValueError("again"))
        return Disposable()

    log = Log()
    subscribe_fused(Fused(subscribe), log.on_next, log.on_error, log.on_completed)
    assert log.seen == [1, "error end"]


def test_a_plain_source_keeps_rxpys_guards() -> None:
    def subscribe(observer: abc.ObserverBase[int], _: Any = None) -> abc.DisposableBase:
        observer.on_completed()
        observer.on_next(2)
        return Disposable()

    log = Log()
    subscribe_fused(reactivex.create(subscribe), log.on_next, log.on_error, log.on_completed)
    assert log.seen == ["completed"]


class Keeping(Keeper):
    """A Keeper over a Log: one end only, as the contract asks of every Keeper."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.on_next = log.on_next
        self.stopped = False

    def ended(self) -> bool:
        return self.stopped

    def on_error(self, error: Exception) -> None:
        if not self.stopped:
            self.stopped = True
            self.log.on_error(error)

    def on_completed(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.log.on_completed()


def test_a_keeper_is_handed_to_a_fused_source_as_it_is() -> None:
    observers: list[Any] = []

    def subscribe(observer: abc.ObserverBase[int], _: Any = None) -> abc.DisposableBase:
        observers.append(observer)
        observer.on_next(1)
        observer.on_completed()
        return Disposable()

    log = Log()
    keeper = Keeping(log)
    subscribe_observer(Fused(subscribe), keeper)
    assert observers == [keeper] and log.seen == [1, "completed"]


def test_an_observer_that_is_no_keeper_gets_the_wrapper() -> None:
    observers: list[Any] = []

    def subscribe(observer: abc.ObserverBase[int], _: Any = None) -> abc.DisposableBase:
        observers.append(observer)
        observer.on_completed()
        observer.on_completed()  # a contract breach: the wrapper passes one end
        return Disposable()

    log = Log()
    subscribe_observer(Fused(subscribe), log)
    assert observers[0] is not log and log.seen == ["completed"]


@pytest.mark.parametrize("ended", [False, True])
def test_a_keepers_fused_subscribe_that_raises_ends_it_or_raises_after_its_end(
    ended: bool,
) -> None:
    def subscribe(observer: abc.ObserverBase[int], _: Any = None) -> abc.DisposableBase:
        if ended:
            observer.on_completed()
        raise ValueError("broken")

    log = Log()
    if ended:
        with pytest.raises(ValueError, match="broken"):
            subscribe_observer(Fused(subscribe), Keeping(log))
        assert log.seen == ["completed"]
    else:
        subscribe_observer(Fused(subscribe), Keeping(log)).dispose()
        assert log.seen == ["error broken"]


def test_a_keeper_subscribes_to_a_plain_source_through_rxpys_guards() -> None:
    def subscribe(observer: abc.ObserverBase[int], _: Any = None) -> abc.DisposableBase:
        observer.on_next(1)
        observer.on_completed()
        observer.on_next(2)
        return Disposable()

    log = Log()
    subscribe_observer(reactivex.create(subscribe), Keeping(log))
    assert log.seen == [1, "completed"]


def test_process_chunk_passes_nothing_after_a_failure_of_its_own() -> None:
    class Breaking(RoundState):
        def process(self, chunk: ChatChunk, emit: Any) -> None:
            raise RuntimeError("state bug")

    chunks: Subject[ChatChunk] = Subject()
    log = Log()
    source = chunks.pipe(process_chunk(Breaking(1)))
    subscribe_fused(source, log.on_next, log.on_error, log.on_completed)  # no wrapper after it
    chunks.on_next(ChatChunk(text="a"))
    chunks.on_next(ChatChunk(text="b"))
    chunks.on_completed()
    assert log.seen == ["error state bug"]


def run_output(log: Log) -> RunOutput:
    return RunOutput(
        log.on_next, log.on_error, log.on_completed, ImmediateScheduler.singleton(), None
    )


@pytest.mark.parametrize("end", ["completed", "error"])
def test_the_run_output_disposes_the_runs_subscription_when_the_run_ends(end: str) -> None:
    log = Log()
    output = run_output(log)
    disposed: list[bool] = []
    output.watch(Disposable(lambda: disposed.append(True)))
    if end == "completed":
        output.on_completed()
    else:
        output.on_error(ValueError("x"))
    assert disposed == [True]


def test_a_run_that_ended_during_subscribe_is_disposed_when_watched() -> None:
    log = Log()
    output = run_output(log)
    output.on_completed()
    disposed: list[bool] = []
    output.watch(Disposable(lambda: disposed.append(True)))
    assert disposed == [True] and log.seen == ["completed"]
