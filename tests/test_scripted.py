"""ScriptedModel: replies played on a scheduler, recorded SSE replayed with real end rules."""

from __future__ import annotations

from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxreact import ChatRequest, ModelError, ScriptedModel, StreamInterruptedError, UserMessage
from rxreact.model.scripted.replies import Pause, RawSSE, text_reply

REQUEST = ChatRequest(messages=(UserMessage(content="q"),))
TEXT = b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
FINISH = b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'


def play(model: ScriptedModel) -> tuple[list[tuple[float, Any]], Exception | None, bool]:
    scheduler = TestScheduler()
    items: list[tuple[float, Any]] = []
    errors: list[Exception] = []
    completed: list[bool] = []
    model.stream(REQUEST).subscribe(
        lambda c: items.append((scheduler.clock, c)),
        errors.append,
        lambda: completed.append(True),
        scheduler=scheduler,
    )
    scheduler.start()
    return items, errors[0] if errors else None, bool(completed)


def test_pauses_are_virtual_time_and_requests_are_recorded() -> None:
    model = ScriptedModel([[*text_reply("a b")[:2], Pause(2.5), *text_reply("a b")[2:]]])
    items, error, completed = play(model)
    assert error is None and completed
    assert [(t, c.text) for t, c in items if c.text] == [(0.0, "a "), (2.5, "b")]
    assert model.requests == [REQUEST]


@pytest.mark.parametrize(
    ("data", "outcome"),
    [
        (TEXT + FINISH + b"data: [DONE]\n\n", "completed"),
        (TEXT + FINISH, "completed"),  # finish reason without [DONE]: a normal end
        (TEXT + b"data: [DONE]\n\n", "completed"),  # [DONE] without a finish reason
        (TEXT, "interrupted"),  # neither: a cut connection
    ],
)
def test_raw_sse_replay_follows_the_stream_end_rules(data: bytes, outcome: str) -> None:
    items, error, completed = play(ScriptedModel([RawSSE(data)]))
    assert items[0][1].text == "hi"
    if outcome == "completed":
        assert completed and error is None
    else:
        assert isinstance(error, StreamInterruptedError) and not completed


def test_running_out_of_script_is_a_clear_error() -> None:
    model = ScriptedModel([text_reply("one")])
    play(model)
    _, error, _ = play(model)
    assert isinstance(error, ModelError)
    assert "no reply for request #2" in str(error)
