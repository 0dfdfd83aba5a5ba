"""The mock server's Responses dialect, seen from a plain HTTP client: the real API's events
and its 400s."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from rxreact.messages import Usage
from rxreact.model.chunks import ChatChunk
from rxreact.model.http.sse import SSEDecoder
from rxreact.model.scripted.replies import text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.integration

USER = {"role": "user", "content": "hi"}


def events_of(server: MockOpenAIServer, body: dict[str, Any]) -> list[dict[str, Any]]:
    answer = httpx.post(f"{server.base_url}/responses", json={"model": "m", "stream": True, **body})
    assert answer.status_code == 200, answer.text
    decoder = SSEDecoder()
    events = decoder.feed(answer.content) + decoder.close()
    for event in events:  # the event line names the type, as the real API's does
        assert json.loads(event.data)["type"] == event.event
    return [json.loads(event.data) for event in events]


def refusal(server: MockOpenAIServer, body: dict[str, Any]) -> str:
    answer = httpx.post(f"{server.base_url}/responses", json={"model": "m", **body})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", None)
    return str(error["message"])


def test_a_reply_is_written_as_the_apis_events() -> None:
    reply = [
        ChatChunk(reasoning="Hmm."),
        *text_reply("Hi.", usage=Usage(prompt_tokens=2, completion_tokens=1, total_tokens=3)),
    ]
    with MockOpenAIServer([reply, tool_call_reply(("f", {"a": 1}))]) as server:
        events = events_of(server, {"input": [USER]})
        calls = events_of(server, {"input": [USER]})
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    final = events[-1]["response"]
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    assert final["usage"] == {"input_tokens": 2, "output_tokens": 1, "total_tokens": 3}
    added = next(e for e in calls if e["type"] == "response.output_item.added")["item"]
    assert (added["type"], added["call_id"], added["name"]) == ("function_call", "call_0", "f")
    assert calls[-1]["response"]["output"][0]["arguments"] == '{"a": 1}'


def test_a_length_finish_is_an_incomplete_response() -> None:
    with MockOpenAIServer([text_reply("Cut", finish_reason="length")]) as server:
        final = events_of(server, {"input": "hi"})[-1]
    assert final["type"] == "response.incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_the_apis_refusals() -> None:
    with MockOpenAIServer([tool_call_reply(("f", {}))]) as server:
        assert "moved to 'text.format'" in refusal(
            server, {"input": "hi", "response_format": {"type": "json_object"}}
        )
        assert refusal(server, {"input": "hi", "messages": []}) == "Unknown parameter: 'messages'."
        chat_tool = {"type": "function", "function": {"name": "f", "parameters": {}}}
        assert "flat function tool" in refusal(server, {"input": "hi", "tools": [chat_tool]})
        orphan = {"type": "function_call_output", "call_id": "call_9", "output": "x"}
        assert refusal(server, {"input": [USER, orphan]}) == (
            "No tool call found for function call output with call_id call_9."
        )
        unseen = {"type": "reasoning", "id": "rs_x", "summary": []}
        assert "not persisted when `store` is set to false" in refusal(
            server, {"input": [USER, unseen], "store": False}
        )
        # A function call that carries the id of an item from a response that reasoned must
        # come after that reasoning item.
        call = {"type": "function_call", "id": "fc_rs_mock_1_0_0", "call_id": "c", "name": "f"}
        assert refusal(server, {"input": [USER, {**call, "arguments": "{}"}]}) == (
            "Item 'fc_rs_mock_1_0_0' of type 'function_call' was provided without its required "
            "'reasoning' item: 'rs_mock_1_0'."
        )


def test_a_whole_response_is_the_apis_response_object() -> None:
    with MockOpenAIServer([text_reply("Cut", finish_reason="length")]) as server:
        answer = httpx.post(f"{server.base_url}/responses", json={"model": "m", "input": "hi"})
    whole = answer.json()
    assert (whole["object"], whole["status"]) == ("response", "incomplete")
    assert whole["incomplete_details"] == {"reason": "max_output_tokens"}
    (message,) = whole["output"]
    assert message["content"][0] == {"type": "output_text", "text": "Cut", "annotations": []}
