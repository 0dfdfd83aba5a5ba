"""ElasticScheduler: pending timers occupy no pool thread; disposal cancels them."""

from __future__ import annotations

import threading

import pytest
from busy_pool import ClockLoop, held
from reactivex.disposable import BooleanDisposable

from rxreact.scheduling import ElasticScheduler, handoff_lateness


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


def test_the_pool_runs_at_most_max_workers_at_once_and_queues_the_rest() -> None:
    scheduler = ElasticScheduler(3, name="bounded")
    gate, all_done, three_in = threading.Event(), threading.Event(), threading.Event()
    lock = threading.Lock()
    running, peak, finished = [0], [0], [0]
    names: set[str] = set()

    def action(_: object, __: object) -> None:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            names.add(threading.current_thread().name)
            if running[0] == 3:
                three_in.set()
        gate.wait(5)
        with lock:
            running[0] -= 1
            finished[0] += 1
            if finished[0] == 10:
                all_done.set()

    for _ in range(10):
        scheduler.schedule(action)
    assert three_in.wait(5)  # the gate opens once three run at once (never four, below)
    gate.set()
    assert all_done.wait(5)
    assert peak[0] == 3
    assert len(names) == 3  # three threads, reused for the seven queued actions
    assert all(t.daemon for t in threading.enumerate() if t.name in names)
    scheduler.shutdown()


def test_an_action_that_raises_is_logged_and_the_thread_goes_on(caplog: object) -> None:
    import logging

    import pytest

    assert isinstance(caplog, pytest.LogCaptureFixture)
    scheduler = ElasticScheduler(1, name="raising")
    ran = threading.Event()

    def boom(_: object, __: object) -> None:
        raise RuntimeError("boom")

    with caplog.at_level(logging.ERROR, logger="rxreact.scheduling"):
        scheduler.schedule(boom)
        scheduler.schedule(lambda s, st: ran.set())
        assert ran.wait(5)  # the one thread survived the exception
    assert any("an action raised" in r.message and r.exc_info for r in caplog.records)
    scheduler.shutdown()


def test_after_shutdown_queued_work_is_dropped_and_new_work_refused() -> None:
    import pytest

    scheduler = ElasticScheduler(1, name="closing")
    started, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def first(_: object, __: object) -> None:
        started.set()
        release.wait(5)

    scheduler.schedule(first)
    assert started.wait(5)
    scheduler.schedule(lambda s, st: ran.append("queued"))
    scheduler.shutdown()
    release.set()
    with pytest.raises(RuntimeError, match="after shutdown"):
        scheduler.schedule(lambda s, st: None)
    assert ran == []


def test_a_tool_that_never_returns_does_not_keep_the_process_alive() -> None:
    """Pool threads are daemon threads: the interpreter exits without joining them."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import threading
        from rxreact import ReactAgent, ScriptedModel
        from rxreact.model.scripted.replies import text_reply, tool_call_reply

        forever = threading.Event()

        def stuck() -> str:
            '''Never returns.'''
            forever.wait()
            return "never"

        model = ScriptedModel([tool_call_reply(("stuck", {})), text_reply("gave up")])
        agent = ReactAgent(model, [stuck], tool_timeout=0.05)
        print(agent.call("go"), flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "gave up"


class Watched(BooleanDisposable):
    """A disposable that says when it was disposed (from any thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.gone = threading.Event()

    def dispose(self) -> None:
        super().dispose()
        self.gone.set()


def test_disposing_a_scheduled_action_disposes_what_it_returned_however_they_interleave() -> None:
    # Before it ran: it never runs. After: what it returned is disposed. While it runs (the
    # dispose lands between the action's start and its return): disposed all the same.
    scheduler = ElasticScheduler(2, name="d")
    gate, ran = threading.Event(), threading.Event()
    blocker = scheduler.schedule(lambda s, st: gate.wait(5))  # holds one worker...
    scheduler.schedule(lambda s, st: gate.wait(5))  # ...and the other
    never: list[int] = []
    before = scheduler.schedule(lambda s, st: never.append(1))
    before.dispose()
    gate.set()

    returned = Watched()
    after = scheduler.schedule(lambda s, st: (ran.set(), returned)[1])
    assert ran.wait(5)
    after.dispose()  # the action has returned, or is returning: disposed either way
    assert returned.gone.wait(5)

    started, release = threading.Event(), threading.Event()
    during_returned = Watched()

    def slow(_: object, __: object) -> Watched:
        started.set()
        release.wait(5)
        return during_returned

    during = scheduler.schedule(slow)
    assert started.wait(5)
    during.dispose()  # while the action runs, before it returned its disposable
    release.set()
    assert during_returned.gone.wait(5)
    assert never == []
    blocker.dispose()


def test_a_disposed_timer_never_runs_and_lets_go_of_its_action() -> None:
    import gc
    import weakref

    class Action:
        def __call__(self, _: object, __: object) -> None:
            fired.append(1)

    fired: list[int] = []
    scheduler = ElasticScheduler(1, name="t")
    action = Action()
    alive = weakref.ref(action)
    timer = scheduler.schedule_relative(3600, action)
    del action
    timer.dispose()
    ran = threading.Event()
    scheduler.schedule(lambda s, st: ran.set())
    assert ran.wait(5)
    gc.collect()
    assert fired == []
    assert alive() is None  # not kept by the heap entry (due in an hour) nor by the handle
    assert timer is not None


def test_handoff_lateness_is_how_long_a_loops_hand_offs_wait_in_the_pool() -> None:
    scheduler = ElasticScheduler(1, name="behind")
    loop, other = ClockLoop(), ClockLoop()
    ran = threading.Event()
    try:
        with held(scheduler) as release:  # the only worker is busy: hand-offs wait
            assert handoff_lateness(loop) == 0.0  # nothing handed over yet
            scheduler.post(ran.set, loop)  # after a quiet tick: handed over at once
            assert handoff_lateness(loop) == 0.0
            loop.now += 2.5
            assert handoff_lateness(loop) == 2.5  # waiting in the queue for 2.5 s so far
            assert handoff_lateness(other) == 0.0  # another loop handed nothing over
            release.set()
            assert ran.wait(5)
            assert handoff_lateness(loop) == 0.0  # the queue is empty: behind by nothing

        # Queued again: the last measured wait (2.5 s) counts until a newer one is measured.
        ran.clear()
        with held(scheduler) as release:
            loop.now += 1.0
            scheduler.post(ran.set, loop)
            loop.now += 0.2
            assert handoff_lateness(loop) == 2.5
            release.set()
            assert ran.wait(5)
        with held(scheduler):
            scheduler.schedule(lambda _s, _t: None)  # the queue is not empty again ...
            assert handoff_lateness(loop) == pytest.approx(0.2)  # ... the last wait: 0.2 s
    finally:
        scheduler.shutdown()
        loop.close()
        other.close()


def test_a_shut_down_pool_is_behind_by_nothing() -> None:
    scheduler = ElasticScheduler(1, name="gone")
    loop = ClockLoop()
    try:
        with held(scheduler):
            scheduler.post(lambda: None, loop)
            loop.now += 1.0
            assert handoff_lateness(loop) == 1.0
            scheduler.shutdown()  # its queue is dropped: its marker will never run
            assert handoff_lateness(loop) == 0.0
    finally:
        loop.close()


def test_a_loops_hand_offs_wait_a_millisecond_while_quiet_and_a_tick_while_busy() -> None:
    from rxreact.rx._daemon_pool import BUSY_POSTS, HANDOFF_TICK, QUIET_TICK

    scheduler = ElasticScheduler(1, name="ticks")
    loop = ClockLoop()
    burst = 2 * BUSY_POSTS
    try:
        with held(scheduler):  # what is handed over stays queued, to be counted
            scheduler.post(lambda: None, loop)  # quiet: at once (behind a marker)
            batch = scheduler._batches[loop]
            assert (scheduler._pool.queued, batch.tick) == (2, QUIET_TICK)
            loop.now += QUIET_TICK / 2
            for _ in range(burst):  # a burst within the millisecond: held for its end
                scheduler.post(lambda: None, loop)
            assert scheduler._pool.queued == 2
            loop.now += QUIET_TICK / 2
            batch._due()  # (the loop's timer) the burst goes in one hand-off
            assert scheduler._pool.queued == 2 + burst
            loop.now += HANDOFF_TICK
            scheduler.post(lambda: None, loop)  # 66 posts in 11 ms: busy from now on
            assert (scheduler._pool.queued, batch.tick) == (3 + burst, HANDOFF_TICK)
            loop.now += 2 * QUIET_TICK
            scheduler.post(lambda: None, loop)  # within the busy tick: held
            assert scheduler._pool.queued == 3 + burst
            loop.now += HANDOFF_TICK
            batch._due()  # one post in the last 12 ms: quiet again
            assert (scheduler._pool.queued, batch.tick) == (4 + burst, QUIET_TICK)
            loop.now += 2 * QUIET_TICK
            scheduler.post(lambda: None, loop)
            assert scheduler._pool.queued == 5 + burst  # after a quiet tick: at once
    finally:
        scheduler.shutdown()
        loop.close()


def test_the_timer_heap_is_rebuilt_without_cancelled_entries() -> None:
    """Cancelled timers do not pile up: past COMPACT_AT, once they are half the heap, the next
    call_later rebuilds it with only the live ones (which still fire)."""
    from rxreact.rx._timer_thread import COMPACT_AT, TimerThread

    timers = TimerThread()
    live = [timers.call_later(3600, lambda: None) for _ in range(10)]
    dead = [timers.call_later(3600, lambda: None) for _ in range(2 * COMPACT_AT)]
    for entry in dead:
        timers.cancel(entry)
    timers.cancel(dead[0])  # cancelling twice counts once
    assert timers.pending == len(live) + len(dead)
    fired = threading.Event()
    timers.call_later(0.0, fired.set)
    assert timers.pending <= len(live) + 1
    assert fired.wait(5.0)
    assert all(entry[2] is not None for entry in live)
