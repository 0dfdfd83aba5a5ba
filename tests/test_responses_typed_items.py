"""OpenAIResponsesModel against servers that require every input item's ``type`` (llama.cpp's
``llama-server``, LiteLLM in front of it): the mock's strict Responses dialect at
``/llama-server/v1/responses`` answers HTTP 400 "Cannot determine type of 'item'" as they do.
A conversation with memory and tool rounds goes on over several turns, in both I/O modes."""

from __future__ import annotations

import httpx
import pytest

from rxreact import InMemoryChatMemory, OpenAIResponsesModel, ReactAgent, tool
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer
from rxreact.testing._responses_request import request_problem

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def test_the_strict_dialect_refuses_an_item_without_its_type() -> None:
    untyped = {"model": "m", "input": [{"role": "user", "content": "hi"}], "stream": False}
    assert request_problem(untyped) is None  # OpenAI reads a role alone as a message
    with MockOpenAIServer([text_reply("Hi.")]) as server:
        url = f"{server.origin}/llama-server/v1/responses"
        refused = httpx.post(url, json=untyped)
        typed = {**untyped, "input": [{"type": "message", "role": "user", "content": "hi"}]}
        taken = httpx.post(url, json=typed)
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == "Cannot determine type of 'item'"
    assert taken.status_code == 200


def test_a_multi_turn_tool_conversation_with_memory_is_taken_by_a_strict_server() -> None:
    script = [
        tool_call_reply(("get_weather", {"city": "Oslo"})),
        text_reply("Oslo is sunny."),
        tool_call_reply(("get_weather", {"city": "Bergen"})),
        text_reply("Bergen is sunny too."),
        text_reply("You asked about Oslo and Bergen."),
    ]
    memory = InMemoryChatMemory()
    with (
        MockOpenAIServer(script) as server,
        OpenAIResponsesModel("m", base_url=f"{server.origin}/llama-server/v1") as model,
    ):
        agent = ReactAgent(model, [get_weather], memory=memory, system_prompt="Be brief.")
        assert agent.call("Oslo?", conversation_id="c") == "Oslo is sunny."
        assert agent.call("And Bergen?", conversation_id="c") == "Bergen is sunny too."
        assert agent.call("What did I ask?", conversation_id="c") == (
            "You asked about Oslo and Bergen."
        )
    assert len(server.requests) == 5  # no 400 on any turn
    assert set(server.request_paths) == {"/llama-server/v1/responses"}
    last = server.requests[-1]["input"]
    assert all("type" in item for item in last)
    assert [item["type"] for item in last] == [
        "message",  # Oslo?
        "function_call",
        "function_call_output",
        "message",  # Oslo is sunny.
        "message",  # And Bergen?
        "function_call",
        "function_call_output",
        "message",  # Bergen is sunny too.
        "message",  # What did I ask?
    ]
    assert last[3] == {"type": "message", "role": "assistant", "content": "Oslo is sunny."}
