"""Gemini's OpenAI-compatible endpoint through ``OpenAIChatModel``: a tool call's thought
signature (``extra_content.google.thought_signature``) is kept from the stream, in every
chat memory and checkpoint, and sent back unchanged to the same endpoint only, under Google's
rules. The mock's Gemini dialect (``/v1beta/openai/chat/completions``) refuses, with HTTP 400
INVALID_ARGUMENT as Gemini 3 does, a current turn whose calls come back without it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from redis_server import RedisServer

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent, SQLiteChatMemory, tool
from rxreact.errors import BadRequestError
from rxreact.memory import ChatMemory, RedisChatMemory
from rxreact.messages import AssistantMessage, ChatRequest, ToolCall, ToolMessage, UserMessage
from rxreact.model.assembly import assemble
from rxreact.model.openai._call_extras import SKIP_SIGNATURE, replay_tag
from rxreact.model.openai.request_codec import encode_request
from rxreact.model.openai.wire import parse_completion
from rxreact.model.scripted.replies import RawSSE, text_reply, tool_call_reply
from rxreact.model.spec import model_from
from rxreact.runs.checkpoints import Checkpoint, decode_checkpoint, encode_checkpoint
from rxreact.testing import MockOpenAIServer
from rxreact.testing._gemini_signatures import sign_call

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


def gemini_url(server: MockOpenAIServer) -> str:
    return f"{server.origin}/v1beta/openai"


def recorded_call(signature: str, *, call_id: str = "function-call-1") -> bytes:
    """A tool call as Gemini 3's compatible endpoint streams it: whole, in one delta, with its
    signature in ``extra_content``, the finish reason and usage on the same chunk."""
    chunk = {
        "choices": [
            {
                "delta": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "extra_content": {"google": {"thought_signature": signature}},
                            "function": {"arguments": '{"city":"Paris"}', "name": "get_weather"},
                            "id": call_id,
                            "index": 0,
                            "type": "function",
                        }
                    ],
                },
                "finish_reason": "tool_calls",
                "index": 0,
            }
        ],
        "created": 1764000000,
        "id": "f2hHaZ6wOtm3nvgP8Z2yqQ4",
        "model": "gemini-3-pro-preview",
        "object": "chat.completion.chunk",
        "usage": {"completion_tokens": 18, "prompt_tokens": 61, "total_tokens": 152},
    }
    return b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n"


def test_a_recorded_signature_is_kept_and_sent_back_on_its_call() -> None:
    signature = sign_call("get_weather", {"city": "Paris"})
    script = [RawSSE(recorded_call(signature)), text_reply("Paris is sunny.")]
    memory = InMemoryChatMemory()
    with (
        MockOpenAIServer(script) as server,
        model_from("gemini-openai:gemini-3-pro-preview", base_url=gemini_url(server)) as model,
    ):
        agent = ReactAgent(model, [get_weather], memory=memory)
        assert agent.call("Weather in Paris?", conversation_id="c") == "Paris is sunny."
        tag = replay_tag(gemini_url(server))
    second = server.requests[1]["messages"]
    (call,) = second[1]["tool_calls"]
    assert call["id"] == "function-call-1"
    assert call["extra_content"] == {"google": {"thought_signature": signature}}
    stored = memory.load("c")[1]
    assert isinstance(stored, AssistantMessage)
    (item,) = stored.replay
    assert item.provider == tag
    assert item.data["extra_content"]["google"]["thought_signature"] == signature


def test_sequential_and_parallel_calls_each_go_back_as_gemini_requires() -> None:
    script = [
        tool_call_reply(("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})),
        tool_call_reply(("get_weather", {"city": "Bergen"}), ids=["call_b"]),
        text_reply("All sunny."),
    ]
    with (
        MockOpenAIServer(script) as server,
        model_from("gemini-openai:gemini-3-flash", base_url=gemini_url(server)) as model,
    ):
        answer = ReactAgent(model, [get_weather]).call("Oslo, Rome, then Bergen?")
    assert answer == "All sunny."  # every request taken: no 400
    last = server.requests[2]["messages"]
    parallel, sequential = last[1]["tool_calls"], last[4]["tool_calls"]
    signature = parallel[0]["extra_content"]["google"]["thought_signature"]
    assert signature == sign_call("get_weather", {"city": "Oslo"})
    assert "extra_content" not in parallel[1]  # of parallel calls only the first has one
    assert sequential[0]["extra_content"]["google"]["thought_signature"] == sign_call(
        "get_weather", {"city": "Bergen"}
    )


SIGNED_COMPLETION = {
    "choices": [
        {
            "message": {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{}"},
                        "extra_content": {"google": {"thought_signature": "c2ln"}},
                    }
                ],
            },
            "finish_reason": "tool_calls",
        }
    ]
}
"""A whole answer of the compatible endpoint: one call, with its signature."""


def history_from_another_model() -> tuple[Any, ...]:
    call = ToolCall(id="call_x", name="get_weather", arguments='{"city": "Oslo"}')
    return (
        UserMessage(content="Oslo?"),
        AssistantMessage(tool_calls=(call,)),
        ToolMessage(tool_call_id="call_x", content="Oslo: sunny"),
    )


def test_a_history_from_another_model_gets_the_documented_placeholder() -> None:
    request = ChatRequest(messages=history_from_another_model())
    with (
        MockOpenAIServer([text_reply("Sunny."), text_reply("never")]) as server,
        model_from("gemini-openai:gemini-3-flash", base_url=gemini_url(server)) as preset,
        OpenAIChatModel("gemini-3-flash", base_url=gemini_url(server)) as plain,
    ):
        assert preset.complete(request).content == "Sunny."
        with pytest.raises(BadRequestError, match="missing a thought_signature") as refused:
            plain.complete(request)  # no placeholder: what Gemini 3 answers
    (call,) = server.requests[0]["messages"][1]["tool_calls"]
    assert call["extra_content"] == {"google": {"thought_signature": SKIP_SIGNATURE}}
    assert refused.value.status_code == 400
    assert "INVALID_ARGUMENT" in str(refused.value.body)


def test_extras_go_back_only_to_the_endpoint_that_made_them() -> None:
    url = "https://generativelanguage.googleapis.com/v1beta/openai"
    signed = parse_completion(SIGNED_COMPLETION, replay_tag(url))
    said = AssistantMessage(tool_calls=signed.tool_calls, replay=signed.replay)
    answer = ToolMessage(tool_call_id="c1", content="ok")
    request = ChatRequest(messages=(UserMessage(content="hi"), said, answer))

    def first_call(tag: str, placeholder: str | None = None) -> dict[str, Any]:
        body = encode_request(
            request, model="m", stream=True, replay_tag=tag, signature_placeholder=placeholder
        )
        return body["messages"][1]["tool_calls"][0]  # type: ignore[no-any-return]

    assert first_call(replay_tag(url))["extra_content"]["google"]["thought_signature"] == "c2ln"
    assert "extra_content" not in first_call(replay_tag("https://api.openai.com/v1"))
    other_gemini = first_call(replay_tag("https://proxy.example/v1"), SKIP_SIGNATURE)
    assert other_gemini["extra_content"]["google"]["thought_signature"] == SKIP_SIGNATURE


def test_a_streamed_call_without_an_id_keeps_its_extras_by_index() -> None:
    tag = replay_tag("http://gemini.test/v1beta/openai")
    from rxreact.model.openai.wire import parse_chunk

    data = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "function": {"name": "get_weather", "arguments": "{}"},
                            "extra_content": {"google": {"thought_signature": "c2ln"}},
                        }
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    chunk = parse_chunk(json.dumps(data), None, tag)
    assert chunk is not None
    response = assemble([chunk])
    said = AssistantMessage(tool_calls=response.tool_calls, replay=response.replay)
    answer = ToolMessage(tool_call_id=response.tool_calls[0].id, content="ok")
    request = ChatRequest(messages=(UserMessage(content="hi"), said, answer))
    body = encode_request(request, model="m", stream=True, replay_tag=tag)
    call = body["messages"][1]["tool_calls"][0]
    assert call["extra_content"] == {"google": {"thought_signature": "c2ln"}}


@pytest.fixture(params=["in_memory", "sqlite", "redis"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ChatMemory]:
    if request.param == "in_memory":
        yield InMemoryChatMemory()
    elif request.param == "sqlite":
        with SQLiteChatMemory(tmp_path / "chat.db") as sqlite:
            yield sqlite
    else:
        server: RedisServer = request.getfixturevalue("redis_server")
        import redis

        with redis.Redis.from_url(server.url) as client:
            client.flushdb()
        with RedisChatMemory(server.url) as stored:
            yield stored


def test_every_memory_keeps_the_signatures_for_the_next_turn(memory: ChatMemory) -> None:
    script = [
        tool_call_reply(("get_weather", {"city": "Oslo"})),
        text_reply("Oslo is sunny."),
        text_reply("You asked about Oslo."),
    ]
    with (
        MockOpenAIServer(script) as server,
        model_from("gemini-openai:gemini-3-flash", base_url=gemini_url(server)) as model,
    ):
        agent = ReactAgent(model, [get_weather], memory=memory)
        agent.call("Oslo?", conversation_id="c")
        assert agent.call("What did I ask?", conversation_id="c") == "You asked about Oslo."
    # The strict server checked the signature that came back from the memory: unchanged.
    (call,) = server.requests[2]["messages"][1]["tool_calls"]
    expected = sign_call("get_weather", {"city": "Oslo"})
    assert call["extra_content"]["google"]["thought_signature"] == expected


def test_a_checkpoint_keeps_the_signature_of_its_response() -> None:
    tag = replay_tag("http://gemini.test/v1beta/openai")
    response = parse_completion(SIGNED_COMPLETION, tag)
    said = AssistantMessage(tool_calls=response.tool_calls, replay=response.replay)
    stored = encode_checkpoint(Checkpoint(kind="response", round=1, messages=(said,)))
    assert decode_checkpoint(stored, "run/1").messages == (said,)
