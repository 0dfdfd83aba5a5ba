"""Tests of rxreact.model.http._call: the watchdog when the reader cannot be woken."""

from __future__ import annotations

import threading
from typing import Any

from reactivex.scheduler import NewThreadScheduler
from reactivex.testing import TestScheduler

from rxreact.errors import ModelTimeoutError
from rxreact.model.http._call import CallSettings, Timeouts
from rxreact.model.http._thread_call import ThreadCall
from rxreact.model.retry_policy import Backoff


def test_the_first_chunk_timeout_reaches_the_subscriber_while_the_reader_is_blocked() -> None:
    # An attempt blocked where no socket can be shut down (a transport rxreact cannot see
    # into): the subscriber still hears the timeout at the limit, not when the read returns.
    timer = TestScheduler()
    entered, release = threading.Event(), threading.Event()
    heard: list[Any] = []
    got = threading.Event()

    def attempt(call: ThreadCall[Any]) -> None:
        entered.set()
        release.wait(10)

    def on_error(error: Exception) -> None:
        heard.append(error)
        got.set()

    class Observer:
        def on_next(self, value: Any) -> None:
            heard.append(value)

        def on_error(self, error: Exception) -> None:
            on_error(error)

        def on_completed(self) -> None:
            heard.append("completed")
            got.set()

    settings = CallSettings(Timeouts(None, 2.0, 2.0), 0, Backoff(), timer)
    call = ThreadCall(attempt, Observer(), settings, NewThreadScheduler())  # type: ignore[arg-type]
    call.start()
    try:
        assert entered.wait(5)
        timer.advance_by(2.0)
        assert got.wait(5), "the timeout waited for the blocked reader"
        assert len(heard) == 1
        assert isinstance(heard[0], ModelTimeoutError)
        assert heard[0].phase == "first_chunk"
    finally:
        release.set()
