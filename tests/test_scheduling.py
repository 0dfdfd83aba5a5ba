"""ElasticScheduler: pending timers occupy no pool thread; disposal cancels them."""

from __future__ import annotations

import threading

from rxreact.scheduling import ElasticScheduler


def test_many_long_timers_do_not_starve_the_pool() -> None:
    scheduler = ElasticScheduler(2, name="t")
    fired: list[int] = []
    timers = [scheduler.schedule_relative(3600, lambda s, st: fired.append(1)) for _ in range(50)]
    ran = threading.Event()
    scheduler.schedule(lambda s, st: ran.set())
    assert ran.wait(5)  # two workers, fifty pending timers, and immediate work still runs
    for timer in timers:
        timer.dispose()
    assert fired == []


def test_timers_fire_in_due_order_on_pool_threads_and_cancel() -> None:
    scheduler = ElasticScheduler(2, name="pool")
    order: list[str] = []
    names: set[str] = set()
    done = threading.Event()

    def mark(label: str) -> object:
        def action(_: object, __: object) -> None:
            order.append(label)
            names.add(threading.current_thread().name)
            if label == "last":
                done.set()

        return action

    scheduler.schedule_relative(0.06, mark("last"))
    cancelled = scheduler.schedule_relative(0.02, mark("cancelled"))
    scheduler.schedule_relative(0.01, mark("first"))
    scheduler.schedule_relative(0.03, mark("second"))
    cancelled.dispose()
    assert done.wait(5)
    assert order == ["first", "second", "last"]
    assert all(name.startswith("pool") for name in names)


def test_timer_scheduler_keeps_real_and_virtual_schedulers_and_replaces_blocking_ones() -> None:
    from reactivex.scheduler import ImmediateScheduler, TrampolineScheduler
    from reactivex.testing import TestScheduler

    from rxreact.scheduling import timer_scheduler

    virtual = TestScheduler()
    pool = ElasticScheduler(1)
    assert timer_scheduler(virtual) is virtual
    assert timer_scheduler(pool) is pool
    shared = timer_scheduler(None)
    assert isinstance(shared, ElasticScheduler)
    assert timer_scheduler(ImmediateScheduler.singleton()) is shared
    assert timer_scheduler(TrampolineScheduler()) is shared
