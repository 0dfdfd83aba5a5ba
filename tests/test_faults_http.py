"""The fault suite: OpenAIChatModel in both I/O modes against a server that misbehaves
(tests/fault_server.py). Every fault ends in a typed error within its limit, or in a retry
that succeeds; a dispose frees the connection at once. Nothing waits by sleeping: the tests
wait on the observer's terminal event and on the server's counters."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fault_server import Fault, FaultServer, ok
from reactivex import Observable
from test_openai_model import REQUEST, Recorder, collect

from rxreact.errors import (
    ModelConnectionError,
    ModelTimeoutError,
    ResponseTooLargeError,
    ServerError,
    StreamInterruptedError,
    StreamProtocolError,
)
from rxreact.model.assembly import assemble
from rxreact.model.openai.client import OpenAIChatModel
from rxreact.model.retry_policy import Backoff

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]

FAST = Backoff(base=0.01, cap=0.05)


def watch(source: Observable[Any]) -> tuple[Recorder, Any]:
    recorder = Recorder()
    return recorder, recorder.subscribe(source)


def result(source: Observable[Any]) -> Recorder:
    return collect(source, timeout=10.0)


@contextmanager
def serving(*script: Fault, **options: Any) -> Iterator[tuple[FaultServer, OpenAIChatModel]]:
    options = {"max_retries": 0, "backoff": FAST, **options}
    with FaultServer(list(script)) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, **options)
        try:
            yield server, model
        finally:
            model.close()


def test_trickling_headers_on_a_reused_connection_time_out_at_the_first_chunk_limit() -> None:
    with serving(ok("warm"), Fault("trickle_headers"), first_chunk_timeout=0.5) as (server, model):
        assert result(model.stream(REQUEST)).completed  # the connection is now pooled
        outcome = result(model.stream(REQUEST))
        assert isinstance(outcome.error, ModelTimeoutError)
        assert outcome.error.phase == "first_chunk"
        # The socket was shut down: the server sees the client gone, the thread is free.
        assert server.wait_for(lambda s: s.closed_by_client >= 1)
        assert server.requests == 2


def test_dispose_frees_a_reused_connection_whose_headers_trickle_in() -> None:
    with serving(ok("warm"), Fault("trickle_headers"), first_chunk_timeout=30) as (server, model):
        assert result(model.stream(REQUEST)).completed
        outcome, subscription = watch(model.stream(REQUEST))
        assert server.wait_for(lambda s: s.requests == 2)
        subscription.dispose()
        assert server.wait_for(lambda s: s.closed_by_client >= 1)
        assert not outcome.done.is_set()  # nothing after dispose
        assert outcome.items == []


@pytest.mark.parametrize("kind", ["stall", "stall_body"])
def test_a_silent_server_times_out_at_the_first_chunk_limit(kind: str) -> None:
    with serving(Fault(kind), first_chunk_timeout=0.3) as (server, model):
        outcome = result(model.stream(REQUEST))
        assert isinstance(outcome.error, ModelTimeoutError)
        assert outcome.error.phase == "first_chunk"
        assert server.wait_for(lambda s: s.closed_by_client >= 1)


def test_a_reset_before_the_answer_is_retried() -> None:
    with serving(Fault("reset"), ok("second try"), max_retries=1) as (server, model):
        outcome = result(model.stream(REQUEST))
        assert outcome.completed
        assert assemble(outcome.items).content == "second try"
        assert server.requests == 2


def test_a_reset_with_no_retries_left_is_a_connection_error() -> None:
    with serving(Fault("reset")) as (_, model):
        assert isinstance(result(model.stream(REQUEST)).error, ModelConnectionError)


def test_a_reset_mid_answer_is_an_interrupted_stream_not_retried() -> None:
    with serving(Fault("reset_mid"), ok(), max_retries=2) as (server, model):
        outcome = result(model.stream(REQUEST))
        assert isinstance(outcome.error, StreamInterruptedError | ModelConnectionError)
        assert assemble(outcome.items).content == "partial"
        assert server.requests == 1


def test_garbage_is_a_protocol_error() -> None:
    with serving(Fault("garbage")) as (_, model):
        assert isinstance(result(model.stream(REQUEST)).error, StreamProtocolError)


def test_a_body_without_done_or_finish_is_an_interrupted_stream() -> None:
    with serving(Fault("no_finish")) as (_, model):
        assert isinstance(result(model.stream(REQUEST)).error, StreamInterruptedError)


def test_a_huge_line_ends_at_the_cap() -> None:
    with serving(Fault("huge_line", size=4 << 20), max_line_bytes=256 << 10) as (_, model):
        outcome = result(model.stream(REQUEST))
        assert isinstance(outcome.error, ResponseTooLargeError)
        assert outcome.error.what == "sse_line"


def test_429_and_503_are_retried_as_asked() -> None:
    script = [Fault("status", status=429, retry_after="0"), Fault("status", status=503), ok("up")]
    with serving(*script, max_retries=2) as (server, model):
        outcome = result(model.stream(REQUEST))
        assert assemble(outcome.items).content == "up"
        assert server.requests == 3


def test_a_503_asking_for_too_long_a_wait_fails_at_once_carrying_it() -> None:
    with serving(Fault("status", status=503, retry_after="120"), max_retries=2) as (server, model):
        outcome = result(model.stream(REQUEST))
        assert isinstance(outcome.error, ServerError)
        assert outcome.error.retry_after == 120
        assert server.requests == 1


def test_dispose_ends_an_endless_stream() -> None:
    with serving(Fault("endless", interval=0.01)) as (server, model):
        outcome, subscription = watch(model.stream(REQUEST))
        assert server.wait_for(lambda s: s.requests == 1)
        subscription.dispose()
        assert server.wait_for(lambda s: s.closed_by_client >= 1)
        assert not outcome.done.is_set()  # nothing after dispose
