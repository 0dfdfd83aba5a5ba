"""AnthropicModel over real HTTP and SSE against the mock server's Messages dialect, in both
I/O modes (the mock enforces Anthropic's request rules: HTTP 400 otherwise): requests, tool
rounds, errors and retries, whole messages, parts, the judge and typed answers. Reasoning
replay and ``pause_turn``: ``test_anthropic_turns.py``."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import reactivex.operators as ops
from anthropic_serve import Serve, ask, get_weather, served
from pydantic import BaseModel

from rxreact import (
    AnthropicModel,
    FinalAnswer,
    InMemoryChatMemory,
    LLMJudge,
    ReactAgent,
    tool,
)
from rxreact.errors import (
    AuthenticationError,
    BadRequestError,
    InvalidArgumentError,
    ModelHTTPError,
    NotFoundError,
    ProviderStreamError,
    RateLimitError,
    StreamInterruptedError,
)
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    File,
    Image,
    Text,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from rxreact.model.anthropic.request_codec import JSON_INSTRUCTION
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk
from rxreact.model.retry_policy import Backoff
from rxreact.model.scripted.replies import (
    Disconnect,
    Fail,
    Hang,
    HTTPErrorReply,
    RawSSE,
    text_reply,
    tool_call_reply,
)
from rxreact.testing._anthropic_rules import sign_thinking

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]


@pytest.fixture
def serve() -> Iterator[Serve]:
    with served() as start:
        yield start


OVERLOADED = ProviderStreamError("Overloaded", error_type="overloaded_error")


def weather_desk(request: ChatRequest) -> Any:
    if request.tool_choice == "none" or isinstance(request.messages[-1], ToolMessage):
        return text_reply(
            "Oslo is sunny, Rome too.", usage=Usage(prompt_tokens=30, completion_tokens=5)
        )
    return tool_call_reply(
        ("get_weather", {"city": "Oslo"}),
        ("get_weather", {"city": "Rome"}),
        ids=["toolu_1", "toolu_2"],
        usage=Usage(prompt_tokens=20, completion_tokens=7, cache_read_input_tokens=15),
    )


def test_a_text_answer_streams_with_anthropics_request_shape(serve: Serve) -> None:
    server, model = serve([text_reply("Hello there, friend.")])
    request = ChatRequest(messages=(UserMessage(content="Hi"),), options={"temperature": 0.2})
    chunks = model.stream(request).pipe(ops.to_list()).run()

    response = assemble(chunks)
    assert (response.content, response.finish_reason) == ("Hello there, friend.", "stop")
    assert response.provider_finish_reason == "end_turn"
    body, headers = server.requests[0], server.request_headers[0]
    assert body == {
        "model": "claude-mock",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "stream": True,
        "temperature": 0.2,
    }
    assert headers["anthropic-version"] == "2023-06-01"
    assert "x-api-key" not in headers and "authorization" not in headers  # loopback: no key


def test_the_key_goes_in_x_api_key_and_betas_in_one_header(serve: Serve) -> None:
    server, model = serve([text_reply("ok")], api_key="sk-ant-secret", betas=("a-1", "b-2"))
    model.stream(ask()).pipe(ops.to_list()).run()
    headers = server.request_headers[0]
    assert headers["x-api-key"] == "sk-ant-secret"
    assert headers["anthropic-beta"] == "a-1,b-2"
    assert "authorization" not in headers
    assert "sk-ant-secret" not in repr(model) + repr(vars(model))


def test_a_tool_round_through_the_agent_sends_one_user_message_of_results(serve: Serve) -> None:
    server, model = serve(weather_desk)
    agent = ReactAgent(model, [get_weather], system_prompt="Be brief.")
    events = list(agent.stream("Weather in Oslo and Rome?").pipe(ops.to_iterable()).run())
    final = events[-1]

    assert isinstance(final, FinalAnswer)
    assert (final.text, final.rounds) == ("Oslo is sunny, Rome too.", 2)
    second = server.requests[1]
    assert second["system"] == [{"type": "text", "text": "Be brief."}]
    assert second["tools"][0]["input_schema"]["properties"]["city"]["type"] == "string"
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "user"]
    uses = second["messages"][1]["content"]
    assert [(b["type"], b["id"], b["input"]) for b in uses] == [
        ("tool_use", "toolu_1", {"city": "Oslo"}),
        ("tool_use", "toolu_2", {"city": "Rome"}),
    ]
    assert second["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Oslo: sunny"},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "Rome: sunny"},
    ]
    # Usage reaches the final answer, summed over the rounds, cache counts as extras.
    assert final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (50, 12)
    assert final.usage.model_extra == {"cache_read_input_tokens": 15}


def test_a_failed_tool_is_sent_back_as_an_error_result(serve: Serve) -> None:
    @tool
    def boom() -> str:
        """Raises."""
        raise RuntimeError("exploded")

    server, model = serve([tool_call_reply(("boom", {}), ids=["toolu_9"]), text_reply("Sorry.")])
    assert ReactAgent(model, [boom]).call("go") == "Sorry."
    result = server.requests[1]["messages"][2]["content"][0]
    assert result["is_error"] is True and "exploded" in result["content"]


def test_the_forced_last_round_declares_the_tools_and_sends_tool_choice_none(
    serve: Serve,
) -> None:
    def script(request: ChatRequest) -> Any:
        if request.tool_choice == "none":
            return text_reply("Best answer from what I have.")
        return tool_call_reply(
            ("get_weather", {"city": "Oslo"}), ids=[f"toolu_{len(request.messages)}"]
        )

    server, model = serve(script)
    result = ReactAgent(model, [get_weather], max_rounds=2).run("weather?")
    assert (result.answer, result.rounds, result.forced) == (
        "Best answer from what I have.",
        3,
        True,
    )
    last = server.requests[-1]
    assert last["tool_choice"] == {"type": "none"}
    assert [t["name"] for t in last["tools"]] == ["get_weather"]
    assert [m["role"] for m in last["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    kinds = [b["type"] for b in last["messages"][-1]["content"]]
    assert kinds == ["tool_result", "text"]  # the results first, then the forcing instruction


def test_a_529_and_an_overloaded_event_before_the_first_delta_are_retried(serve: Serve) -> None:
    script = [
        HTTPErrorReply(529, "Overloaded", {"retry-after": "0"}),
        [Fail(OVERLOADED)],
        text_reply("Back."),
    ]
    server, model = serve(script, max_retries=2, backoff=Backoff(base=0.0))
    chunks = model.stream(ask()).pipe(ops.to_list()).run()
    assert assemble(chunks).content == "Back."
    assert len(server.requests) == 3


def test_an_error_event_after_the_first_delta_is_a_provider_stream_error(serve: Serve) -> None:
    server, model = serve(
        [[ChatChunk(text="Hel"), Fail(OVERLOADED)], text_reply("never")], max_retries=2
    )
    seen: list[ChatChunk] = []
    with pytest.raises(ProviderStreamError) as caught:
        model.stream(ask()).pipe(ops.do_action(seen.append)).run()
    assert (caught.value.error_type, caught.value.provider_message) == (
        "overloaded_error",
        "Overloaded",
    )
    assert [c.text for c in seen] == ["Hel"] and len(server.requests) == 1


def test_a_stream_cut_before_message_stop_is_an_error_and_nothing_is_stored(serve: Serve) -> None:
    _server, model = serve([[ChatChunk(text="Partial"), Disconnect()]])
    memory = InMemoryChatMemory()
    agent = ReactAgent(model, memory=memory)
    with pytest.raises(StreamInterruptedError):
        agent.call("Hi", conversation_id="c")
    assert list(memory.load("c")) == []


def test_disposing_closes_the_connection(serve: Serve) -> None:
    server, model = serve([[ChatChunk(text="x"), Hang()]])
    first = threading.Event()
    subscription = model.stream(ask()).subscribe(on_next=lambda _: first.set())
    assert first.wait(5)
    subscription.dispose()
    assert server.wait_for_disconnects(1, timeout=5)


def test_complete_reads_a_whole_message(serve: Serve) -> None:
    usage = Usage(prompt_tokens=12, completion_tokens=3, cache_creation_input_tokens=10)
    server, model = serve(
        [
            text_reply("Whole.", reasoning="Thinking it over.", usage=usage),
            tool_call_reply(("get_weather", {"city": "Oslo"}), ids=["toolu_7"]),
        ]
    )
    response = model.complete(ask())
    assert (response.content, response.reasoning, response.finish_reason) == (
        "Whole.",
        "Thinking it over.",
        "stop",
    )
    assert response.replay[0].data["signature"] == sign_thinking("Thinking it over.")
    assert response.usage == usage.model_copy(update={"total_tokens": 15})
    assert server.requests[0]["stream"] is False
    calls = model.complete(ask()).tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("toolu_7", "get_weather", '{"city": "Oslo"}')
    ]


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, BadRequestError),
        (401, AuthenticationError),
        (403, AuthenticationError),
        (404, NotFoundError),
        (413, ModelHTTPError),
        (429, RateLimitError),
    ],
)
def test_http_errors_map_with_anthropics_message(serve: Serve, status: int, error: type) -> None:
    _server, model = serve([HTTPErrorReply(status, f"problem {status}")])
    with pytest.raises(error, match=f"problem {status}") as caught:
        model.stream(ask()).run()
    assert caught.value.status_code == status


def test_the_judge_asks_for_json_in_the_system_prompt(serve: Serve) -> None:
    server, model = serve([text_reply("Sunny."), text_reply('{"passed": true, "feedback": ""}')])
    result = ReactAgent(model, judge=LLMJudge()).run("Weather?")
    assert (result.answer, result.validated) == ("Sunny.", True)
    judge_body = server.requests[1]
    assert judge_body["stream"] is False and "response_format" not in judge_body
    assert judge_body["system"][-1] == {"type": "text", "text": JSON_INSTRUCTION}


class Weather(BaseModel):
    city: str
    celsius: int


def test_output_type_uses_structured_outputs_with_closed_objects(serve: Serve) -> None:
    server, model = serve([text_reply('{"city": "Oslo", "celsius": 12}')])
    result = ReactAgent(model).run("Weather?", output_type=Weather)
    assert result.output == Weather(city="Oslo", celsius=12)
    fmt = server.requests[0]["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"] == {**Weather.model_json_schema(), "additionalProperties": False}


PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
PDF = b"%PDF-1.4 tiny"


def test_images_and_files_are_encoded_as_anthropic_blocks(serve: Serve) -> None:
    parts = (
        Text(text="Look:"),
        Image.from_bytes(PNG, "image/png"),
        Image.from_url("https://example.com/cat.jpg"),
        File.from_bytes(PDF, "application/pdf", name="report.pdf"),
        File.from_bytes(b"plain words", "text/plain", name="notes.txt"),
    )
    server, model = serve([text_reply("Seen.")])
    model.stream(ChatRequest(messages=(UserMessage(content=parts),))).run()
    blocks = server.requests[0]["messages"][0]["content"]
    png64, pdf64 = parts[1].data_base64, parts[3].data_base64  # type: ignore[union-attr]
    assert blocks == [
        {"type": "text", "text": "Look:"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png64}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": pdf64},
            "title": "report.pdf",
        },
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "plain words"},
            "title": "notes.txt",
        },
    ]


def test_a_tool_result_made_of_parts_carries_them(serve: Serve) -> None:
    image = Image.from_bytes(PNG, "image/png")
    history = (
        UserMessage(content="Show me."),
        AssistantMessage(tool_calls=(ToolCall(id="toolu_1", name="snap", arguments="{}"),)),
        ToolMessage(tool_call_id="toolu_1", content=(Text(text="here"), image)),
    )
    server, model = serve([text_reply("Nice.")])
    model.stream(ChatRequest(messages=history)).run()
    result = server.requests[0]["messages"][2]["content"][0]
    assert result["content"][1]["source"]["media_type"] == "image/png"


@pytest.mark.parametrize(
    ("part", "named"),
    [
        (Image.from_bytes(b"BM..", "image/bmp"), "image/bmp"),
        (File.from_bytes(b"PK..", "application/zip", name="a.zip"), "application/zip"),
    ],
)
def test_a_part_anthropic_cannot_take_is_refused_by_name(
    serve: Serve, part: Any, named: str
) -> None:
    server, model = serve([text_reply("never")])
    with pytest.raises(InvalidArgumentError, match=named):
        model.stream(ChatRequest(messages=(UserMessage(content=(part,)),))).run()
    assert server.requests == []


def test_an_emoji_cut_into_two_escapes_is_joined(serve: Serve) -> None:
    delta = (
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"%s"}}\n\n'
    )
    raw = (
        'event: message_start\ndata: {"type":"message_start","message":{"usage":{}}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"text","text":""}}\n\n'
        + delta % "Hi \\ud83d"
        + delta % "\\ude00!"
        + 'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
        '"usage":{"output_tokens":3}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    _server, model = serve([RawSSE(raw.encode())])
    assert assemble(model.stream(ask()).pipe(ops.to_list()).run()).content == "Hi \U0001f600!"


def test_cache_breakpoints_are_accepted_and_cache_counts_reach_the_usage(serve: Serve) -> None:
    usage = Usage(prompt_tokens=1200, completion_tokens=5, cache_creation_input_tokens=1100)
    server, model = serve([text_reply("Cached.", usage=usage)], cache=True)
    agent = ReactAgent(model, [get_weather], system_prompt="A long, stable prompt.")
    result = agent.run("Hi")
    body = server.requests[0]
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert result.usage is not None
    assert result.usage.prompt_tokens == 1200
    assert result.usage.model_extra == {"cache_creation_input_tokens": 1100}


def test_a_finished_run_leaves_no_cycles(serve: Serve) -> None:
    from test_no_cycles import cyclic_garbage

    script = [tool_call_reply(("get_weather", {"city": "Paris"})), text_reply("Sunny.")] * 2
    _server, model = serve(script)
    agent = ReactAgent(model, [get_weather])
    assert agent.call("warm up?") == "Sunny."  # imports, pools, first connection
    assert cyclic_garbage(lambda: agent.call("weather?")) == []


def test_a_base_url_ending_in_v1_is_taken_as_the_root(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _model = serve([text_reply("one"), text_reply("two")])
    with AnthropicModel("m", base_url=server.origin + "/v1/") as model:
        assert assemble(model.stream(ask()).pipe(ops.to_list()).run()).content == "one"
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.origin + "/v1")
    with AnthropicModel("m") as model:
        assert model.base_url == server.origin
        assert assemble(model.stream(ask()).pipe(ops.to_list()).run()).content == "two"
