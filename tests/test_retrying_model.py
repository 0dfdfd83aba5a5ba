"""retry_unstarted / RetryingModel: backoff in virtual time, never after the first chunk."""

from __future__ import annotations

from reactivex.testing import TestScheduler

from rxreact import ReactAgent, ScriptedModel, ServerError
from rxreact.model.retry_policy import Backoff
from rxreact.model.retrying_model import RetryingModel
from rxreact.model.scripted.replies import Fail, HTTPErrorReply, text_reply


def run(agent: ReactAgent, scheduler: TestScheduler) -> tuple[list[tuple[float, object]], object]:
    """Items and the error, each with its virtual time."""
    items: list[tuple[float, object]] = []
    errors: list[tuple[float, Exception]] = []
    agent.stream("q").subscribe(
        lambda e: items.append((scheduler.clock, e)),
        lambda e: errors.append((scheduler.clock, e)),
    )
    scheduler.start()
    return items, errors[0] if errors else None


def test_whole_loop_retries_with_exact_virtual_backoff() -> None:
    scheduler = TestScheduler()
    inner = ScriptedModel(
        [
            HTTPErrorReply(503, "overloaded"),
            HTTPErrorReply(429, "slow down", headers={"Retry-After": "3"}),
            text_reply("finally"),
        ]
    )
    agent = ReactAgent(RetryingModel(inner, max_retries=2), scheduler=scheduler)
    items, error = run(agent, scheduler)

    assert error is None
    assert len(inner.requests) == 3
    # first retry after base 0.5 s; the second waits Retry-After 3 s (longer than 1.0 s backoff)
    text_times = [t for t, e in items if getattr(e, "type", "") == "text_delta"]
    assert text_times == [3.5]
    assert items[-1][1].text == "finally"  # type: ignore[attr-defined]


def test_no_retry_once_something_was_emitted_and_retries_run_out() -> None:
    scheduler = TestScheduler()
    inner = ScriptedModel([[*text_reply("half")[:2], Fail(ServerError(502, "bad gateway"))]])
    _, failure = run(ReactAgent(RetryingModel(inner), scheduler=scheduler), scheduler)
    assert failure is not None
    assert isinstance(failure[1], ServerError)
    assert len(inner.requests) == 1

    scheduler = TestScheduler()
    inner = ScriptedModel(lambda request: HTTPErrorReply(500, "down"))
    model = RetryingModel(inner, max_retries=3, backoff=Backoff(base=1, factor=2))
    _, failure = run(ReactAgent(model, scheduler=scheduler), scheduler)
    assert failure is not None
    assert isinstance(failure[1], ServerError)
    assert len(inner.requests) == 4
    assert failure[0] == 1 + 2 + 4  # the three waits, in virtual seconds
