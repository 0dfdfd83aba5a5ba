"""Handoffs (``ReactAgent(handoffs=[...])``) in virtual time: a triage agent handing a turn on
twice, the events marked with the agent running the turn, one valid turn in memory, and
``max_handoffs``."""

from __future__ import annotations

from typing import Any

import pytest
from reactivex.testing import TestScheduler

from rxreact import (
    InMemoryChatMemory,
    InvalidArgumentError,
    MaxHandoffsExceededError,
    ReactAgent,
    tool,
)
from rxreact.events import FinalAnswer, Handoff, agent_event_adapter
from rxreact.history import ensure_tool_calls_closed
from rxreact.messages import AssistantMessage, ChatRequest, ToolMessage, Usage, UserMessage
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply


def usage(total: int) -> Usage:
    return Usage(prompt_tokens=total - 1, completion_tokens=1, total_tokens=total)


class Recording(ScriptedModel):
    """A scripted model that keeps the requests it was sent."""

    def __init__(self, replies: list[Reply], scheduler: TestScheduler) -> None:
        self.seen: list[ChatRequest] = []
        remaining = iter(replies)

        def reply(request: ChatRequest) -> Reply:
            self.seen.append(request)
            return next(remaining)

        super().__init__(reply, scheduler=scheduler)


@tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def desk(scheduler: TestScheduler, memory: InMemoryChatMemory) -> tuple[ReactAgent, ...]:
    tech_model = Recording([text_reply("Restart the router.", usage=usage(30))], scheduler)
    tech = ReactAgent(
        tech_model,
        name="tech",
        description="Fixes connection problems.",
        system_prompt="You are tech support.",
        scheduler=scheduler,
    )
    billing_model = Recording(
        [
            tool_call_reply(("refund", {"order": "A1"}), ids=["b1"], usage=usage(20)),
            tool_call_reply(("transfer_to_tech", {}), ids=["b2"], usage=usage(21)),
        ],
        scheduler,
    )
    billing = ReactAgent(
        billing_model,
        [refund],
        name="billing",
        description="Refunds and invoices.",
        system_prompt="You are billing.",
        handoffs=[tech],
        scheduler=scheduler,
    )
    triage_model = Recording(
        [tool_call_reply(("transfer_to_billing", {}), ids=["t1"], usage=usage(10))], scheduler
    )
    triage = ReactAgent(
        triage_model,
        name="triage",
        system_prompt="Route the customer.",
        handoffs=[billing],
        memory=memory,
        scheduler=scheduler,
    )
    return triage, billing, tech


def test_a_triage_agent_hands_off_twice_and_memory_holds_one_valid_turn() -> None:
    scheduler = TestScheduler()
    memory = InMemoryChatMemory()
    triage, billing, tech = desk(scheduler, memory)
    assert "transfer_to_billing" in triage.tools
    spec = triage.tools["transfer_to_billing"].spec
    assert "Refunds and invoices." in spec.description

    events: list[Any] = []
    errors: list[Exception] = []
    triage.stream("Refund A1, and my internet is down", "c1").subscribe(
        events.append, errors.append, scheduler=scheduler
    )
    scheduler.start()
    assert not errors

    handoffs = [e for e in events if isinstance(e, Handoff)]
    assert [(h.from_agent, h.to_agent, h.call_id, h.agent) for h in handoffs] == [
        ("triage", "billing", "t1", "triage"),
        ("billing", "tech", "b2", "billing"),
    ]
    agents = [e.agent for e in events]
    first, second = events.index(handoffs[0]), events.index(handoffs[1])
    assert set(agents[:first]) == {"triage"}
    assert set(agents[first + 1 : second + 1]) == {"billing"}
    assert set(agents[second + 1 :]) == {"tech"}
    assert all(e.path == () for e in events)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    final = events[-1]
    assert isinstance(final, FinalAnswer) and final.text == "Restart the router."
    assert final.rounds == 4
    assert final.usage_by_agent == {
        "triage": usage(10),
        "billing": usage(20) + usage(21),
        "tech": usage(30),
    }

    # the target reads the conversation so far, under its own instructions and tools
    (tech_request,) = tech.model.seen  # type: ignore[attr-defined]
    assert tech_request.messages[0].content == "You are tech support."
    assert [t.name for t in tech_request.tools] == []
    roles = [type(m).__name__ for m in tech_request.messages[1:]]
    assert roles == [
        "UserMessage",
        "AssistantMessage",  # transfer_to_billing
        "ToolMessage",
        "AssistantMessage",  # refund
        "ToolMessage",
        "AssistantMessage",  # transfer_to_tech
        "ToolMessage",
    ]
    first_billing = billing.model.seen[0]  # type: ignore[attr-defined]
    assert {t.name for t in first_billing.tools} == {"refund", "transfer_to_tech"}

    # memory: the whole turn, once, in the first agent's conversation, and a valid history
    turn = memory.load("c1")
    assert isinstance(turn[0], UserMessage) and isinstance(turn[-1], AssistantMessage)
    assert turn[-1].content == "Restart the router."
    assert len(turn) == 8
    assert ensure_tool_calls_closed(turn) == turn
    calls = [c.id for m in turn if isinstance(m, AssistantMessage) for c in m.tool_calls]
    answered = [m.tool_call_id for m in turn if isinstance(m, ToolMessage)]
    assert calls == answered == ["t1", "b1", "b2"]


def test_max_handoffs_ends_a_run_that_passes_the_turn_on_too_often() -> None:
    scheduler = TestScheduler()
    c = ReactAgent(ScriptedModel([text_reply("c")]), name="c", scheduler=scheduler)
    b = ReactAgent(
        ScriptedModel([tool_call_reply(("transfer_to_c", {}))]),
        name="b",
        handoffs=[c],
        scheduler=scheduler,
    )
    a = ReactAgent(
        ScriptedModel([tool_call_reply(("transfer_to_b", {}))]),
        name="a",
        handoffs=[b],
        max_handoffs=1,
        scheduler=scheduler,
        memory=InMemoryChatMemory(),
    )
    errors: list[Exception] = []
    a.stream("q", "c1").subscribe(on_error=errors.append, scheduler=scheduler)
    scheduler.start()
    (error,) = errors
    assert isinstance(error, MaxHandoffsExceededError)
    assert "max_handoffs=1" in str(error) and "b -> c" in str(error)
    assert a.memory is not None and a.memory.load("c1") == []


def test_handoff_events_serialize_and_settings_are_checked() -> None:
    event = Handoff(round=2, from_agent="a", to_agent="b", call_id="c9")
    assert agent_event_adapter.validate_json(agent_event_adapter.dump_json(event)) == event
    target = ReactAgent(ScriptedModel([]), name="billing")
    with pytest.raises(InvalidArgumentError):
        ReactAgent(ScriptedModel([]), handoffs=target)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        ReactAgent(ScriptedModel([]), handoffs=["billing"])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError):
        ReactAgent(ScriptedModel([]), handoffs=[target, target])
    with pytest.raises(InvalidArgumentError):
        ReactAgent(ScriptedModel([]), handoffs=[target], max_handoffs=-1)


def test_the_terminal_shows_handoffs_and_trips_but_not_a_childs_inside() -> None:
    import io

    from rxreact._cli.terminal import TerminalRenderer
    from rxreact.events import GuardrailTripped, TextDelta

    out, err = io.StringIO(), io.StringIO()
    render = TerminalRenderer(out, err, color=False, spinner=False)
    render(Handoff(round=1, from_agent="triage", to_agent="billing", call_id="t1"))
    render(TextDelta(round=1, delta="child text", agent="coder", path=("p1",)))
    render(TextDelta(round=2, delta="answer"))
    render(GuardrailTripped(round=2, guardrail="no_secrets", kind="output", reason="a secret"))
    assert out.getvalue() == "answer"
    assert "triage hands over to billing" in err.getvalue()
    assert "guardrail no_secrets: a secret" in err.getvalue()
