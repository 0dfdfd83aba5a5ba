"""OpenAIResponsesModel against the mock server's Responses dialect: real sockets, real SSE,
in both I/O modes. The mock refuses (HTTP 400) what the real API refuses, and checks that
reasoning items come back unchanged."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import reactivex.operators as ops
from pydantic import BaseModel

from rxreact import (
    InMemoryChatMemory,
    LLMJudge,
    OpenAIChatModel,
    OpenAIResponsesModel,
    ReactAgent,
    tool,
)
from rxreact.errors import (
    BadRequestError,
    InvalidArgumentError,
    ProviderStreamError,
    StreamInterruptedError,
)
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    File,
    Image,
    ReplayItem,
    Text,
    ToolMessage,
    Usage,
    UserMessage,
)
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk
from rxreact.model.retry_policy import Backoff
from rxreact.model.scripted.replies import (
    Disconnect,
    Fail,
    Hang,
    HTTPErrorReply,
    Script,
    split_text,
    text_reply,
    tool_call_reply,
)
from rxreact.testing import MockOpenAIServer

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]

FAST = Backoff(base=0.01, factor=2.0, cap=0.05)
REQUEST = ChatRequest(messages=(UserMessage(content="hi"),))
OVERLOADED = ProviderStreamError(
    "Our servers are currently overloaded.",
    code="server_is_overloaded",
    error_type="service_unavailable_error",
)
USAGE = Usage(
    prompt_tokens=12,
    completion_tokens=5,
    total_tokens=17,
    prompt_tokens_details={"cached_tokens": 8},  # type: ignore[call-arg]
    completion_tokens_details={"reasoning_tokens": 3},  # type: ignore[call-arg]
)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@contextmanager
def serve(script: Script, **kwargs: Any) -> Iterator[tuple[MockOpenAIServer, OpenAIResponsesModel]]:
    kwargs.setdefault("backoff", FAST)
    with (
        MockOpenAIServer(script) as server,
        OpenAIResponsesModel("mock-model", base_url=server.base_url, **kwargs) as model,
    ):
        yield server, model


def reasoned_call(reasoning: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """A reply that reasons (a summary the mock turns into a reasoning item), then calls."""
    reply = tool_call_reply(*calls)
    return [reply[0], *(ChatChunk(reasoning=w) for w in split_text(reasoning)), *reply[1:]]


def chunks_of(model: OpenAIResponsesModel, request: ChatRequest = REQUEST) -> list[ChatChunk]:
    return model.stream(request).pipe(ops.to_list()).run()


def stream_error(model: OpenAIResponsesModel, request: ChatRequest = REQUEST) -> Exception:
    errors: list[Exception] = []
    done = threading.Event()
    model.stream(request).subscribe(
        on_error=lambda e: (errors.append(e), done.set()), on_completed=done.set
    )
    assert done.wait(10)
    assert errors, "the stream should have failed"
    return errors[0]


def test_a_text_answer_is_streamed_from_a_responses_request() -> None:
    with serve([text_reply("Hello there.", usage=USAGE)]) as (server, model):
        response = assemble(chunks_of(model))
    assert (response.content, response.finish_reason) == ("Hello there.", "stop")
    assert response.usage == USAGE
    body = server.requests[0]
    assert body["input"] == [{"type": "message", "role": "user", "content": "hi"}]
    assert (body["stream"], body["store"]) == (True, False)


def test_a_tool_round_through_the_agent() -> None:
    script = [tool_call_reply(("get_weather", {"city": "Oslo"})), text_reply("Oslo is sunny.")]
    with serve(script) as (server, model):
        result = ReactAgent(model, [get_weather], system_prompt="Be brief.").run("Oslo?")
    assert (result.answer, result.rounds) == ("Oslo is sunny.", 2)
    second = server.requests[1]
    assert second["instructions"] == "Be brief."
    assert second["input"][1:] == [
        {
            "type": "function_call",
            "call_id": "call_0",
            "name": "get_weather",
            "arguments": '{"city": "Oslo"}',
        },
        {"type": "function_call_output", "call_id": "call_0", "output": "Oslo: sunny"},
    ]
    assert second["tools"][0]["name"] == "get_weather" and "function" not in second["tools"][0]


def test_reasoning_streams_as_reasoning_and_is_replayed_unchanged_never_shown() -> None:
    script = [
        reasoned_call("Look it up first.", ("get_weather", {"city": "Oslo"})),
        text_reply("Oslo is sunny."),
        text_reply("You asked about Oslo."),
    ]
    memory = InMemoryChatMemory()
    with serve(script, reasoning={"effort": "low", "summary": "auto"}) as (server, model):
        agent = ReactAgent(model, [get_weather], memory=memory)
        events = list(agent.iter("Oslo?", conversation_id="c"))
        assert agent.call("What did I ask?", conversation_id="c") == "You asked about Oslo."

    assert "".join(e.delta for e in events if e.type == "reasoning_delta") == "Look it up first."
    stored = memory.load("c")[1]
    assert isinstance(stored, AssistantMessage) and stored.reasoning == "Look it up first."
    (item,) = stored.replay
    assert item.provider == "openai-responses" and item.data["id"].startswith("rs_")
    assert "encrypted_content" in item.data
    for body in server.requests[1:]:  # both later requests carry it, as it was received
        assert body["reasoning"] == {"effort": "low", "summary": "auto"}
        assert body["include"] == ["reasoning.encrypted_content"]
        assert item.data in body["input"]
        position = body["input"].index(item.data)
        assert body["input"][position + 1]["type"] == "function_call"
    # Events carry no replay item, and the answer text knows nothing of them.
    assert item.data["encrypted_content"] not in json.dumps(
        [e.model_dump(mode="json") for e in events]
    )


def test_a_changed_reasoning_item_is_refused_like_the_real_api_does() -> None:
    script = [reasoned_call("Think.", ("get_weather", {"city": "Oslo"}))]
    with serve(script, max_retries=0) as (_, model):
        first = assemble(chunks_of(model))
        (item,) = first.replay
        tampered = {**item.data, "encrypted_content": item.data["encrypted_content"] + "x"}
        said = AssistantMessage(
            tool_calls=first.tool_calls, replay=(ReplayItem(provider=item.provider, data=tampered),)
        )
        result = ToolMessage(tool_call_id=first.tool_calls[0].id, content="sunny")
        error = stream_error(model, ChatRequest(messages=(*REQUEST.messages, said, result)))
    assert isinstance(error, BadRequestError)
    assert error.provider_message == (
        f"The encrypted content for item {item.data['id']} could not be verified."
    )


def test_a_history_that_drops_the_reasoning_a_call_needs_is_refused() -> None:
    memory = InMemoryChatMemory()
    script = [reasoned_call("Think.", ("get_weather", {"city": "Oslo"})), text_reply("Sunny.")]
    with serve(script, max_retries=0) as (_, model):
        ReactAgent(model, [get_weather], memory=memory).run("Oslo?", conversation_id="c")
        history = memory.load("c")
        stripped = [
            m.model_copy(update={"replay": ()}) if isinstance(m, AssistantMessage) else m
            for m in history
        ]
        error = stream_error(model, ChatRequest(messages=tuple(stripped)))
    assert isinstance(error, BadRequestError)
    assert "was provided without its required 'reasoning' item" in str(error)


def test_a_conversation_continued_on_another_model_drops_the_reasoning_items() -> None:
    memory = InMemoryChatMemory()
    with serve(
        [reasoned_call("Think.", ("get_weather", {"city": "Oslo"})), text_reply("Sunny.")]
    ) as (_, model):
        ReactAgent(model, [get_weather], memory=memory).run("Oslo?", conversation_id="c")
    with MockOpenAIServer([text_reply("Still sunny.")]) as chat_server:
        chat = OpenAIChatModel("m", base_url=chat_server.base_url)
        assert (
            ReactAgent(chat, [get_weather], memory=memory).call("And now?", conversation_id="c")
            == "Still sunny."
        )
        chat.close()
    assert "encrypted_content" not in json.dumps(chat_server.requests[0])
    assert "reasoning" not in json.dumps(chat_server.requests[0]["messages"])


def test_the_forced_last_round_declares_the_tools_and_forbids_calls() -> None:
    def script(request: ChatRequest) -> Any:
        if request.tool_choice == "none":
            return text_reply("Best answer from what I have.")
        return tool_call_reply(("get_weather", {"city": "Oslo"}))

    with serve(script) as (server, model):
        result = ReactAgent(model, [get_weather], max_rounds=1).run("weather?")
    assert (result.answer, result.forced) == ("Best answer from what I have.", True)
    last = server.requests[-1]
    assert (last["tool_choice"], [t["name"] for t in last["tools"]]) == ("none", ["get_weather"])


def test_an_overload_before_the_first_delta_is_retried_as_is_a_429() -> None:
    script = [[Fail(OVERLOADED)], HTTPErrorReply(429, "slow down"), text_reply("Fine now.")]
    with serve(script) as (server, model):
        assert assemble(chunks_of(model)).content == "Fine now."
    assert len(server.requests) == 3


def test_an_error_after_the_first_delta_is_not_retried() -> None:
    with serve([[*text_reply("Half an answer")[:3], Fail(OVERLOADED)], text_reply("x")]) as (
        server,
        model,
    ):
        error = stream_error(model)
    assert isinstance(error, ProviderStreamError) and error.code == "server_is_overloaded"
    assert len(server.requests) == 1


def test_a_stream_cut_before_its_terminal_event_stores_nothing() -> None:
    memory = InMemoryChatMemory()
    script = [[*text_reply("All of it."), Disconnect()]]
    with serve(script, max_retries=0) as (_, model), pytest.raises(StreamInterruptedError):
        ReactAgent(model, memory=memory).run("hi", conversation_id="c")
    assert memory.load("c") == []


def test_disposing_closes_the_connection() -> None:
    with serve([[*text_reply("partial answer")[:2], Hang()]]) as (server, model):
        seen = threading.Event()
        subscription = model.stream(REQUEST).subscribe(lambda _: seen.set())
        assert seen.wait(5)
        subscription.dispose()
        assert server.wait_for_disconnects(1, timeout=5)


def test_complete_reads_a_whole_response_like_the_stream() -> None:
    reply = [*reasoned_call("Think.", ("get_weather", {"city": "Oslo"}))]
    reply[-1] = reply[-1]._replace(usage=USAGE)
    with serve([reply, reply]) as (server, model):
        whole = model.complete(REQUEST)
        streamed = assemble(chunks_of(model))
    assert server.requests[0]["stream"] is False
    # One reasoning item each, with its own id and encryption per response (which the call
    # ids the mock writes name).
    assert whole.model_dump(exclude={"replay", "tool_calls"}) == streamed.model_dump(
        exclude={"replay", "tool_calls"}
    )
    assert [(c.name, c.arguments) for c in whole.tool_calls] == [
        (c.name, c.arguments) for c in streamed.tool_calls
    ]
    assert [r.data["summary"] for r in whole.replay] == [r.data["summary"] for r in streamed.replay]
    assert (whole.finish_reason, whole.usage, whole.reasoning) == ("tool_calls", USAGE, "Think.")


def test_images_and_files_are_sent_as_input_parts_and_an_unreadable_image_is_refused() -> None:
    png = Image.from_bytes(b"\x89PNG\r\n", "image/png")
    pdf = File.from_bytes(b"%PDF-1.7", "application/pdf", name="report.pdf")
    request = ChatRequest(messages=(UserMessage(content=(Text(text="Read these."), png, pdf)),))
    with serve([text_reply("Read.")]) as (server, model):
        assert assemble(chunks_of(model, request)).content == "Read."
        parts = server.requests[0]["input"][0]["content"]
        assert [p["type"] for p in parts] == ["input_text", "input_image", "input_file"]
        assert parts[1]["image_url"].startswith("data:image/png;base64,")
        assert parts[2]["filename"] == "report.pdf"

        bmp = Image.from_bytes(b"BM", "image/bmp")
        error = stream_error(model, ChatRequest(messages=(UserMessage(content=(bmp,)),)))
        assert isinstance(error, InvalidArgumentError) and "image/bmp" in str(error)
        assert len(server.requests) == 1  # refused before sending


def test_usage_reaches_the_final_answer() -> None:
    with serve([text_reply("Hi.", usage=USAGE)]) as (_, model):
        events = list(ReactAgent(model).iter("hi"))
    final = events[-1]
    assert final.type == "final_answer" and final.usage is not None
    assert (final.usage.prompt_tokens, final.usage.completion_tokens) == (12, 5)
    assert final.usage.model_dump()["prompt_tokens_details"] == {"cached_tokens": 8}


def test_the_judge_asks_for_json_through_text_format() -> None:
    verdict = text_reply(json.dumps({"passed": True, "feedback": ""}))
    with serve([text_reply("Oslo is sunny."), verdict]) as (server, model):
        result = ReactAgent(model, judge=LLMJudge()).run("Weather in Oslo?")
    assert (result.answer, result.validated) == ("Oslo is sunny.", True)
    judge_body = server.requests[1]
    assert judge_body["stream"] is False
    assert judge_body["text"] == {"format": {"type": "json_object"}}
    assert "response_format" not in judge_body


class Weather(BaseModel):
    city: str
    celsius: int


def test_a_typed_answer_asks_for_the_schema_through_text_format() -> None:
    answer = json.dumps({"city": "Oslo", "celsius": 12})
    with serve([text_reply(answer)]) as (server, model):
        result = ReactAgent(model).run("Weather in Oslo?", output_type=Weather)
    assert result.output == Weather(city="Oslo", celsius=12)
    fmt = server.requests[0]["text"]["format"]
    assert (fmt["type"], fmt["name"], fmt["schema"]) == (
        "json_schema",
        "Weather",
        Weather.model_json_schema(),
    )
