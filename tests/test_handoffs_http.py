"""A handoff over real HTTP (loopback mock servers that validate every history like the real
API, both I/O modes): the target's requests carry the whole conversation so far."""

from __future__ import annotations

from typing import Any

import pytest

from rxreact import InMemoryChatMemory, ReactAgent
from rxreact.model.scripted.replies import text_reply, tool_call_reply

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


def test_triage_hands_the_turn_to_billing_over_http(serve_model: Any) -> None:
    billing_server, billing_model = serve_model([text_reply("Your refund is on its way.")])
    _, triage_model = serve_model([tool_call_reply(("transfer_to_billing", {}), ids=["t1"])])
    billing = ReactAgent(billing_model, name="billing", description="Refunds.")
    memory = InMemoryChatMemory()
    triage = ReactAgent(triage_model, name="triage", handoffs=[billing], memory=memory)

    result = triage.run("I want my money back", conversation_id="c1")

    assert result.answer == "Your refund is on its way."
    (request,) = billing_server.requests  # accepted: a valid history
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "tool"]
    assert request["messages"][1]["tool_calls"][0]["function"]["name"] == "transfer_to_billing"
    assert [m.role for m in memory.load("c1")] == ["user", "assistant", "tool", "assistant"]
