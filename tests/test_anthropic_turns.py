"""AnthropicModel's turns over HTTP in both I/O modes: thinking blocks replayed unchanged (the
mock verifies their signatures) and ``pause_turn`` continued by the model as one stream."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import reactivex.operators as ops
from anthropic_serve import THINKING, Serve, ask, get_weather, served

from rxreact import AnthropicModel, FinalAnswer, InMemoryChatMemory, ReactAgent
from rxreact.errors import BadRequestError
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    ReplayItem,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk
from rxreact.model.scripted.replies import RawSSE, text_reply, tool_call_reply
from rxreact.testing._anthropic_rules import sign_thinking

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


@pytest.fixture
def serve() -> Iterator[Serve]:
    with served() as start:
        yield start


def test_thinking_is_reasoning_and_its_blocks_are_replayed_unchanged(serve: Serve) -> None:
    def script(request: ChatRequest) -> Any:
        if isinstance(request.messages[-1], ToolMessage):
            return text_reply("Sunny.", reasoning="The tool says sunny.")
        thought = tool_call_reply(("get_weather", {"city": "Oslo"}), ids=["toolu_1"])
        redacted = ReplayItem(
            provider="anthropic", data={"type": "redacted_thinking", "data": "xyz"}
        )
        return [
            ChatChunk(reasoning="I should look it up."),
            ChatChunk(replay=(redacted,)),
            *thought,
        ]

    server, model = serve(script, thinking=THINKING)
    events = list(
        ReactAgent(model, [get_weather]).stream("Weather in Oslo?").pipe(ops.to_iterable()).run()
    )
    final = events[-1]
    assert isinstance(final, FinalAnswer) and final.text == "Sunny."
    assert server.requests[0]["thinking"] == THINKING
    assistant = server.requests[1]["messages"][1]["content"]
    assert assistant[0] == {
        "type": "thinking",
        "thinking": "I should look it up.",
        "signature": sign_thinking("I should look it up."),
    }
    assert assistant[1]["type"] == "redacted_thinking" and assistant[1]["data"].startswith("xyz.")
    assert assistant[2]["type"] == "tool_use"
    shown = "".join(repr(e) for e in events)
    assert sign_thinking("I should look it up.") not in shown  # never in events


def test_a_signature_only_thinking_block_is_replayed(serve: Serve) -> None:
    signature = sign_thinking("")
    raw = (
        'event: message_start\ndata: {"type":"message_start","message":{"usage":'
        '{"input_tokens":5,"output_tokens":1}}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"thinking","thinking":"","signature":""}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        f'"delta":{{"type":"signature_delta","signature":"{signature}"}}}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":1,'
        '"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,'
        '"delta":{"type":"input_json_delta","partial_json":"{\\"city\\": \\"Oslo\\"}"}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"tool_use"},'
        '"usage":{"output_tokens":9}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    server, model = serve([RawSSE(raw.encode()), text_reply("Sunny.")], thinking=THINKING)
    assert ReactAgent(model, [get_weather]).call("Weather?") == "Sunny."
    block = server.requests[1]["messages"][1]["content"][0]
    assert block == {"type": "thinking", "thinking": "", "signature": signature}


def test_the_mock_refuses_a_tool_round_without_its_signed_thinking(serve: Serve) -> None:
    server, model = serve([text_reply("never")], thinking=THINKING)
    call = ToolCall(id="toolu_1", name="get_weather", arguments='{"city": "Oslo"}')
    forged = ReplayItem(
        provider="anthropic", data={"type": "thinking", "thinking": "hm", "signature": "forged"}
    )
    spec = get_weather.spec
    history = (
        UserMessage(content="Weather?"),
        AssistantMessage(tool_calls=(call,), replay=(forged,)),
        ToolMessage(tool_call_id="toolu_1", content="sunny"),
    )
    with pytest.raises(BadRequestError, match="Invalid `signature`"):
        model.stream(ChatRequest(messages=history, tools=(spec,))).run()
    other = ReplayItem(provider="openai-responses", data={"type": "reasoning", "id": "rs_1"})
    request = ChatRequest(
        messages=(history[0], AssistantMessage(tool_calls=(call,), replay=(other,)), history[2]),
        tools=(spec,),
    )
    # Another provider's items are dropped, never sent; with no thinking block left the API
    # would refuse thinking (400), so that request goes without it.
    assert assemble(model.stream(request).pipe(ops.to_list()).run()).content == "never"
    assert server.requests[-1]["messages"][1]["content"][0]["type"] == "tool_use"
    assert "thinking" not in server.requests[-1]


def test_pause_turn_is_continued_as_one_stream(serve: Serve) -> None:
    paused = [
        ChatChunk(text="Let me search."),
        ChatChunk(
            finish_reason="stop",
            provider_finish_reason="pause_turn",
            usage=Usage(prompt_tokens=10, completion_tokens=4),
        ),
    ]
    server, model = serve(
        [paused, text_reply(" Found it.", usage=Usage(prompt_tokens=20, completion_tokens=3))]
    )
    response = assemble(model.stream(ask()).pipe(ops.to_list()).run())
    assert (response.content, response.finish_reason) == ("Let me search. Found it.", "stop")
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (30, 7)  # type: ignore[union-attr]
    follow_up = server.requests[1]["messages"]
    assert follow_up[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "Let me search."}],
    }


def test_pause_turn_sends_server_tool_blocks_back_unchanged(serve: Serve) -> None:
    search = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    found = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    raw = (
        'event: message_start\ndata: {"type":"message_start","message":'
        '{"usage":{"input_tokens":5}}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":'
        '{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":'
        '{"type":"input_json_delta","partial_json":"{\\"query\\": \\"oslo\\"}"}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":'
        '{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"pause_turn"},'
        '"usage":{"output_tokens":2}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    server, model = serve([RawSSE(raw.encode()), text_reply("Sunny in Oslo.")])
    response = assemble(model.stream(ask()).pipe(ops.to_list()).run())
    assert (response.content, response.tool_calls) == ("Sunny in Oslo.", ())
    assert server.requests[1]["messages"][-1]["content"] == [
        {**search, "input": {"query": "oslo"}},
        found,
    ]


def test_complete_continues_a_paused_turn(serve: Serve) -> None:
    paused = [
        ChatChunk(text="Searching."),
        ChatChunk(finish_reason="stop", provider_finish_reason="pause_turn"),
    ]
    server, model = serve([paused, text_reply(" Done.")])
    response = model.complete(ask())
    assert (response.content, response.finish_reason) == ("Searching. Done.", "stop")
    assert server.requests[1]["messages"][-1]["role"] == "assistant"


def test_a_turn_paused_past_max_pause_turns_ends_as_length(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    def paused(text: str) -> list[Any]:
        return [
            ChatChunk(text=text),
            ChatChunk(finish_reason="stop", provider_finish_reason="pause_turn"),
        ]

    monkeypatch.setattr(AnthropicModel, "max_pause_turns", 1)
    server, model = serve([paused("One."), paused(" Two."), text_reply("never")])
    response = assemble(model.stream(ask()).pipe(ops.to_list()).run())
    assert (response.content, response.finish_reason) == ("One. Two.", "length")
    assert response.provider_finish_reason == "pause_turn"
    assert len(server.requests) == 2
    last = server.requests[1]["messages"][-1]
    assert last == {"role": "assistant", "content": [{"type": "text", "text": "One."}]}


def test_thinking_blocks_kept_in_memory_go_back_on_the_next_turn(serve: Serve) -> None:
    server, model = serve(
        [text_reply("First.", reasoning="Plain question."), text_reply("Second.")],
        thinking=THINKING,
    )
    agent = ReactAgent(model, memory=InMemoryChatMemory())
    assert agent.call("One?", conversation_id="c") == "First."
    assert agent.call("Two?", conversation_id="c") == "Second."
    previous = server.requests[1]["messages"][1]["content"]
    assert previous[0] == {
        "type": "thinking",
        "thinking": "Plain question.",
        "signature": sign_thinking("Plain question."),
    }


def test_a_run_with_a_paused_turn_leaves_no_cycles(serve: Serve) -> None:
    from test_no_cycles import cyclic_garbage

    paused = [
        ChatChunk(text="Searching."),
        ChatChunk(finish_reason="stop", provider_finish_reason="pause_turn"),
    ]
    _server, model = serve([paused, text_reply(" Found.")] * 2)
    agent = ReactAgent(model)
    assert agent.call("warm up?") == "Searching. Found."
    assert cyclic_garbage(lambda: agent.call("again?")) == []
