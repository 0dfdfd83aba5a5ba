"""GeminiModel over real HTTP and SSE against the mock server's native Gemini dialect, in both
I/O modes (the mock refuses, with HTTP 400, what Gemini refuses: turns that do not
alternate, unanswered calls, missing or changed thought signatures): requests, tool rounds
with memory, thinking, the forced round, blocked answers, whole responses, the judge and
typed answers, and the ``gemini:`` / ``gemini-openai:`` prefixes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import reactivex.operators as ops
from pydantic import BaseModel

from rxreact import (
    AnthropicModel,
    ContentBlockedError,
    GeminiModel,
    InMemoryChatMemory,
    LLMJudge,
    OpenAIChatModel,
    ReactAgent,
    model_from,
    tool,
)
from rxreact.errors import BadRequestError
from rxreact.messages import AssistantMessage, ChatRequest, Image, Text, Usage, UserMessage
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk
from rxreact.model.retry_policy import Backoff
from rxreact.model.scripted.replies import RawSSE, Script, text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer
from rxreact.testing._gemini_signatures import sign_call

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("io_mode")]

FAST = Backoff(base=0.01, factor=2.0, cap=0.05)
REQUEST = ChatRequest(messages=(UserMessage(content="hi"),))


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@contextmanager
def serve(script: Script, **kwargs: Any) -> Iterator[tuple[MockOpenAIServer, GeminiModel]]:
    kwargs.setdefault("backoff", FAST)
    with (
        MockOpenAIServer(script) as server,
        GeminiModel("gemini-3-flash", base_url=server.origin, **kwargs) as model,
    ):
        yield server, model


def test_a_text_answer_streams_from_stream_generate_content() -> None:
    usage = Usage(prompt_tokens=9, completion_tokens=4, total_tokens=13)
    with serve([text_reply("Hello there.", usage=usage)], api_key="k-123") as (server, model):
        chunks = model.stream(REQUEST).pipe(ops.to_list()).run()
    response = assemble(chunks)
    assert (response.content, response.finish_reason, response.usage) == (
        "Hello there.",
        "stop",
        usage,
    )
    assert server.request_paths == ["/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse"]
    assert server.request_headers[0]["x-goog-api-key"] == "k-123"
    assert "authorization" not in server.request_headers[0]
    assert server.requests[0] == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def test_tool_rounds_with_memory_send_every_signature_back_where_it_came() -> None:
    script = [
        tool_call_reply(("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"})),
        tool_call_reply(("get_weather", {"city": "Bergen"})),
        text_reply("All sunny."),
        text_reply("You asked about three cities."),
    ]
    memory = InMemoryChatMemory()
    with serve(script) as (server, model):
        agent = ReactAgent(model, [get_weather], memory=memory, system_prompt="Be brief.")
        assert agent.call("Oslo, Rome, then Bergen?", conversation_id="c") == "All sunny."
        assert agent.call("What did I ask?", conversation_id="c") == (
            "You asked about three cities."
        )
    assert len(server.requests) == 4  # none refused
    contents = server.requests[3]["contents"]
    assert [c["role"] for c in contents] == [
        "user",
        "model",
        "user",
        "model",
        "user",
        "model",
        "user",
    ]
    parallel = contents[1]["parts"]
    assert parallel[0]["thoughtSignature"] == sign_call("get_weather", {"city": "Oslo"})
    assert "thoughtSignature" not in parallel[1]
    assert contents[3]["parts"][0]["thoughtSignature"] == sign_call(
        "get_weather", {"city": "Bergen"}
    )
    assert "thoughtSignature" in contents[5]["parts"][0]  # the answer's text signature
    stored = memory.load("c")[1]
    assert isinstance(stored, AssistantMessage)
    assert [r.provider for r in stored.replay] == ["gemini", "gemini"]
    assert all("id" not in p["functionCall"] for p in parallel)  # ids were ours, not Gemini's


def test_a_changed_signature_is_refused_as_gemini_does() -> None:
    stream = (
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":'
        b'{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"forged"}]},'
        b'"finishReason":"STOP","index":0}]}\r\n\r\n'
    )
    with (
        serve([RawSSE(stream), text_reply("never")]) as (server, model),
        pytest.raises(BadRequestError, match="Corrupted thought signature"),
    ):
        ReactAgent(model, [get_weather]).call("Oslo?")
    sent = server.requests[1]["contents"][1]["parts"][0]
    assert sent["thoughtSignature"] == "forged"  # sent back unchanged, as it came


def test_a_conversation_from_another_model_goes_on_with_the_placeholder() -> None:
    memory = InMemoryChatMemory()
    with (
        MockOpenAIServer(
            [tool_call_reply(("get_weather", {"city": "Oslo"})), text_reply("Sunny.")]
        ) as server,
        OpenAIChatModel("m", base_url=server.base_url) as other,
    ):
        agent = ReactAgent(other, [get_weather], memory=memory, max_rounds=1)
        agent.call("Oslo?", conversation_id="c")  # the forced round answered
    with serve([text_reply("Still sunny.")]) as (server, model):
        history = memory.load("c")
        request = ChatRequest(messages=(*history[:3],), tools=(get_weather.spec,))
        assert model.complete(request).content == "Still sunny."
    part = server.requests[0]["contents"][1]["parts"][0]
    assert part["thoughtSignature"] == "skip_thought_signature_validator"


def test_thought_summaries_stream_as_reasoning() -> None:
    script = [[ChatChunk(reasoning="Think "), ChatChunk(reasoning="first."), *text_reply("Done.")]]
    thinking = {"includeThoughts": True, "thinkingBudget": 512}
    with serve(script, thinking=thinking) as (server, model):
        events = list(ReactAgent(model).iter("hi"))
    reasoning = "".join(e.delta for e in events if e.type == "reasoning_delta")
    assert reasoning == "Think first."
    assert server.requests[0]["generationConfig"] == {"thinkingConfig": thinking}


def test_the_forced_round_says_none_with_its_instruction_beside_the_results() -> None:
    script = [tool_call_reply(("get_weather", {"city": "Oslo"})), text_reply("Sunny, I think.")]
    with serve(script) as (server, model):
        result = ReactAgent(model, [get_weather], max_rounds=1).run("Oslo?")
    assert result.answer == "Sunny, I think."
    forced = server.requests[1]
    assert forced["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    assert forced["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    last = forced["contents"][-1]
    assert last["role"] == "user"
    assert [next(iter(p)) for p in last["parts"]] == ["functionResponse", "text"]


def test_a_blocked_answer_is_not_retried_and_stores_nothing() -> None:
    memory = InMemoryChatMemory()
    script = [[ChatChunk(finish_reason="content_filter")], text_reply("never")]
    with (
        serve(script, max_retries=2) as (server, model),
        pytest.raises(ContentBlockedError) as caught,
    ):
        ReactAgent(model, memory=memory).call("hi", conversation_id="c")
    assert caught.value.reason == "SAFETY"
    assert len(server.requests) == 1
    assert list(memory.load("c")) == []


def test_complete_reads_a_whole_response_like_the_stream() -> None:
    script = [
        tool_call_reply(("get_weather", {"city": "Oslo"})),
        tool_call_reply(("get_weather", {"city": "Oslo"})),
    ]
    with serve(script) as (server, model):
        whole = model.complete(REQUEST)
        streamed = assemble(model.stream(REQUEST).pipe(ops.to_list()).run())
    assert server.request_paths[0] == "/v1beta/models/gemini-3-flash:generateContent"
    assert whole == streamed
    assert whole.finish_reason == "tool_calls"


def test_images_go_as_inline_data() -> None:
    png = Image.from_bytes(b"\x89PNG fake", "image/png")
    request = ChatRequest(messages=(UserMessage(content=(Text(text="What is it?"), png)),))
    with serve([text_reply("A picture.")]) as (server, model):
        assert model.complete(request).content == "A picture."
    parts = server.requests[0]["contents"][0]["parts"]
    assert parts[1] == {"inlineData": {"mimeType": "image/png", "data": png.data_base64}}


class Forecast(BaseModel):
    city: str
    sunny: bool


def test_a_typed_answer_and_the_judge_ask_for_json_through_generation_config() -> None:
    script = [
        text_reply('{"city": "Oslo", "sunny": true}'),
        text_reply("Oslo is sunny."),
        text_reply(json.dumps({"passed": True, "feedback": ""})),
    ]
    with serve(script) as (server, model):
        typed = ReactAgent(model).run("Oslo?", output_type=Forecast)
        judged = ReactAgent(model, judge=LLMJudge()).run("Oslo?")
    assert typed.output == Forecast(city="Oslo", sunny=True)
    config = server.requests[0]["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"] == Forecast.model_json_schema()
    assert (judged.answer, judged.validated) == ("Oslo is sunny.", True)
    assert server.request_paths[2].endswith(":generateContent")
    assert server.requests[2]["generationConfig"] == {"responseMimeType": "application/json"}


def test_the_gemini_prefix_is_the_native_api_and_gemini_openai_the_compatible_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with MockOpenAIServer([text_reply("Native."), text_reply("Compatible.")]) as server:
        monkeypatch.setenv("GEMINI_BASE_URL", f"{server.origin}/v1beta")
        monkeypatch.setenv("GEMINI_OPENAI_BASE_URL", f"{server.origin}/v1beta/openai")
        monkeypatch.delenv("GEMINI_API_KEY", raising=False)
        with model_from("gemini:gemini-3-flash") as native:
            assert isinstance(native, GeminiModel)
            assert native.complete(REQUEST).content == "Native."
        with model_from("gemini-openai:gemini-3-flash") as compatible:
            assert isinstance(compatible, OpenAIChatModel)
            assert compatible.complete(REQUEST).content == "Compatible."
    assert server.request_paths == [
        "/v1beta/models/gemini-3-flash:generateContent",
        "/v1beta/openai/chat/completions",
    ]


def test_a_history_from_anthropic_keeps_its_replay_items_away_from_gemini() -> None:
    with MockOpenAIServer(
        [text_reply("Thought it over.", reasoning="Hmm."), text_reply("Yes.")]
    ) as server:
        memory = InMemoryChatMemory()
        with AnthropicModel(
            "m", base_url=server.origin, thinking={"type": "enabled", "budget_tokens": 1024}
        ) as claude:
            ReactAgent(claude, memory=memory).call("Think?", conversation_id="c")
        with GeminiModel("gemini-3-flash", base_url=server.origin) as model:
            assert ReactAgent(model, memory=memory).call("Sure?", conversation_id="c") == "Yes."
    sent = json.dumps(server.requests[1])
    assert "signature" not in sent.replace("thoughtSignature", "")
