"""to_ui_message_stream's data parts, in virtual time: a restarted round and a tripped guardrail
name the parts to take back; an approval's decision is told to every follower."""

from __future__ import annotations

from typing import Any

import reactivex
from reactivex.testing import TestScheduler

from rxreact import GuardrailResult, ReactAgent, tool
from rxreact.events import FinalAnswer, RoundRestarted, RoundStarted, TextDelta
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.serve.ui_stream import UIChunk, to_ui_message_stream


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Deletes a file."""
    return f"deleted {path}"


def mapped(events: list[Any], after: int = 0) -> list[UIChunk]:
    out: list[UIChunk] = []
    reactivex.from_iterable(events).pipe(to_ui_message_stream(after=after)).subscribe(out.append)
    return out


def streamed(agent: ReactAgent) -> list[dict[str, Any]]:
    scheduler = agent.scheduler
    assert isinstance(scheduler, TestScheduler)
    out: list[UIChunk] = []
    agent.stream("q").pipe(to_ui_message_stream()).subscribe(out.append)
    scheduler.start()
    return [c.part for c in out]


RESTARTED = [
    RoundStarted(round=1, seq=1),
    TextDelta(round=1, seq=2, delta="Old "),
    RoundRestarted(round=1, seq=3, reason="worker w1 stopped"),
    RoundStarted(round=1, seq=4),
    TextDelta(round=1, seq=5, delta="New."),
    FinalAnswer(round=1, seq=6, text="New.", rounds=1),
]


def test_a_restarted_round_names_its_parts_and_streams_under_new_ids() -> None:
    parts = [c.part for c in mapped(RESTARTED)]
    assert parts == [
        {"type": "start"},
        {"type": "start-step"},
        {"type": "text-start", "id": "text-1-1"},
        {"type": "text-delta", "id": "text-1-1", "delta": "Old "},
        {"type": "text-end", "id": "text-1-1"},
        {
            "type": "data-round-restarted",
            "data": {
                "round": 1,
                "reason": "worker w1 stopped",
                "partIds": ["text-1-1"],
                "toolCallIds": [],
            },
        },
        {"type": "finish-step"},
        {"type": "start-step"},
        {"type": "text-start", "id": "text-1-2"},
        {"type": "text-delta", "id": "text-1-2", "delta": "New."},
        {"type": "text-end", "id": "text-1-2"},
        {"type": "finish-step"},
        {"type": "finish", "finishReason": "stop"},
    ]


def test_a_resumed_stream_names_the_same_ids() -> None:
    whole = mapped(RESTARTED)
    resumed = mapped(RESTARTED, after=2)
    assert resumed == [c for c in whole if c.seq is not None and c.seq > 2]


def secret_check(text: str) -> GuardrailResult:
    """Trips on an answer that tells the secret."""
    return GuardrailResult(tripped="secret" in text, reason="it tells the secret")


def test_a_tripped_guardrail_names_the_text_parts_it_takes_back() -> None:
    model = ScriptedModel([text_reply("Paris is sunny. The secret is 42.")])
    agent = ReactAgent(
        model, output_guardrails=[secret_check], hold="none", scheduler=TestScheduler()
    )
    parts = streamed(agent)
    kinds = [p["type"] for p in parts]
    trip = kinds.index("data-guardrail-tripped")
    assert kinds[trip - 1] == "text-end" and kinds[trip + 1 :] == ["finish-step", "error", "finish"]
    data = parts[trip]["data"]
    text_ids = {p["id"] for p in parts if p["type"] == "text-start"}
    assert data["partIds"] == sorted(text_ids) and len(text_ids) == 1
    sent = "".join(p["delta"] for p in parts if p["type"] == "text-delta")
    assert data["withdrawn"] == sent and sent.startswith("Paris is sunny.")
    assert (data["guardrail"], data["kind"], data["reason"]) == (
        "secret_check",
        "output",
        "it tells the secret",
    )


def approval_parts(approver: Any) -> list[dict[str, Any]]:
    model = ScriptedModel([tool_call_reply(("delete_file", {"path": "/a"})), text_reply("ok")])
    agent = ReactAgent(model, [delete_file], approver=approver, scheduler=TestScheduler())
    return [p for p in streamed(agent) if "approval" in p["type"] or p["type"].startswith("tool-o")]


def test_an_approved_call_says_so_before_it_runs() -> None:
    assert approval_parts(lambda request: True) == [
        {"type": "tool-approval-request", "approvalId": "call_0", "toolCallId": "call_0"},
        {"type": "data-approval", "data": {"approvalId": "call_0", "approved": True}},
        {"type": "tool-output-available", "toolCallId": "call_0", "output": "deleted /a"},
    ]


def test_a_denied_call_says_so_with_the_result_the_model_reads() -> None:
    request, decided, output = approval_parts(lambda request: False)
    assert request["type"] == "tool-approval-request"
    assert decided["type"] == "data-approval"
    assert decided["data"]["approved"] is False and decided["data"]["approvalId"] == "call_0"
    assert decided["data"]["reason"] == output["output"] and "denied" in output["output"]


def test_a_tripped_input_guardrail_takes_nothing_back() -> None:
    def no_secrets(question: str, history: Any) -> GuardrailResult:
        return GuardrailResult(tripped=True, reason="off topic")

    model = ScriptedModel([text_reply("never sent")])
    agent = ReactAgent(model, input_guardrails=[no_secrets], scheduler=TestScheduler())
    parts = streamed(agent)
    (trip,) = [p for p in parts if p["type"] == "data-guardrail-tripped"]
    assert trip["data"]["kind"] == "input" and trip["data"]["partIds"] == []
    assert not any(p["type"] == "text-delta" for p in parts)
    assert [p["type"] for p in parts][-2:] == ["error", "finish"]
