"""OpenTelemetry GenAI spans: real runs over the loopback mock, spans read from the SDK's
in-memory exporter."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from rxreact import Image, ReactAgent, tool
from rxreact.errors import BadRequestError
from rxreact.events import TextDelta
from rxreact.messages import Usage
from rxreact.model.chunks import ChatChunk
from rxreact.model.scripted.replies import Hang, HTTPErrorReply, text_reply, tool_call_reply

pytestmark = pytest.mark.integration

USAGE_1 = Usage(prompt_tokens=11, completion_tokens=7, total_tokens=18)
USAGE_2 = Usage(prompt_tokens=30, completion_tokens=5, total_tokens=35)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@tool
def broken(city: str) -> str:
    """Always raises."""
    raise RuntimeError("sensor offline")


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def _tool_round() -> list[Any]:
    return [
        tool_call_reply(
            ("get_weather", {"city": "Oslo"}), ("broken", {"city": "Rome"}), usage=USAGE_1
        ),
        text_reply("Oslo is sunny.", usage=USAGE_2),
    ]


@pytest.mark.usefixtures("io_mode")
def test_a_run_is_one_trace_of_genai_spans_across_threads(
    serve_model: Any, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    _, model = serve_model(_tool_round())
    agent = ReactAgent(model, [get_weather, broken], tracer_provider=provider)
    outer = provider.get_tracer("test").start_span("http request")
    with trace.use_span(outer, end_on_exit=True):
        agent.run("Weather?", conversation_id="c-1")

    spans = _by_name(exporter.get_finished_spans())
    (run,) = spans["invoke_agent"]
    chats = sorted(spans["chat mock"], key=lambda s: s.start_time or 0)
    (weather,) = spans["execute_tool get_weather"]
    (failed,) = spans["execute_tool broken"]
    assert run.parent is not None and run.parent.span_id == outer.get_span_context().span_id
    for child in (*chats, weather, failed):  # tools ran on pool threads, rounds on others
        assert child.parent is not None
        assert child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id
    assert len(chats) == 2
    first = dict(chats[0].attributes or {})
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.request.model"] == "mock"
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (11, 7)
    assert dict(chats[1].attributes or {})["gen_ai.response.finish_reasons"] == ("stop",)
    run_attributes = dict(run.attributes or {})
    assert run_attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run_attributes["gen_ai.conversation.id"] == "c-1"
    assert run_attributes["gen_ai.usage.input_tokens"] == 41  # summed over the rounds
    assert run_attributes["gen_ai.usage.output_tokens"] == 12
    tool_attributes = dict(weather.attributes or {})
    assert tool_attributes["gen_ai.tool.name"] == "get_weather"
    assert tool_attributes["gen_ai.tool.call.id"].startswith("call_")
    assert weather.status.status_code is StatusCode.UNSET
    assert failed.status.status_code is StatusCode.ERROR
    assert run.status.status_code is StatusCode.UNSET
    for span in (run, *chats, weather):  # content only when opted in
        assert not any(".messages" in k or "arguments" in k for k in span.attributes or {})


def test_content_is_recorded_when_opted_in(
    serve_model: Any, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    _, model = serve_model(_tool_round())
    agent = ReactAgent(model, [get_weather, broken], tracer_provider=provider, trace_content=True)
    agent.run("Weather?")
    spans = _by_name(exporter.get_finished_spans())
    chat = min(spans["chat mock"], key=lambda s: s.start_time or 0)
    inputs = json.loads(str((chat.attributes or {})["gen_ai.input.messages"]))
    assert inputs == [{"role": "user", "parts": [{"type": "text", "content": "Weather?"}]}]
    outputs = json.loads(str((chat.attributes or {})["gen_ai.output.messages"]))
    assert [p["name"] for p in outputs[0]["parts"]] == ["get_weather", "broken"]
    (weather,) = spans["execute_tool get_weather"]
    assert (weather.attributes or {})["gen_ai.tool.call.result"] == "Oslo: sunny"
    assert json.loads(str((weather.attributes or {})["gen_ai.tool.call.arguments"])) == {
        "city": "Oslo"
    }


def test_parts_are_recorded_without_their_bytes(
    serve_model: Any, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    _, model = serve_model([text_reply("A dot.")])
    agent = ReactAgent(model, tracer_provider=provider, trace_content=True)
    png = Image.from_bytes(b"\x89PNG", "image/png")
    agent.run(["What is this?", png, Image.from_url("https://x.test/cat.png")])
    (chat,) = _by_name(exporter.get_finished_spans())["chat mock"]
    inputs = json.loads(str((chat.attributes or {})["gen_ai.input.messages"]))
    assert inputs == [
        {
            "role": "user",
            "parts": [
                {"type": "text", "content": "What is this?"},
                {"type": "text", "content": "[image: image/png, 4 bytes]"},
                {"type": "uri", "modality": "image", "uri": "https://x.test/cat.png"},
            ],
        }
    ]


def test_a_failed_request_is_recorded_on_the_chat_and_run_spans(
    serve_model: Any, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    _, model = serve_model([HTTPErrorReply(400, "bad request")])
    agent = ReactAgent(model, tracer_provider=provider)
    with pytest.raises(BadRequestError):
        agent.run("Hi")
    spans = _by_name(exporter.get_finished_spans())
    for span in (spans["invoke_agent"][0], spans["chat mock"][0]):
        assert span.status.status_code is StatusCode.ERROR
        assert (span.attributes or {})["error.type"] == "BadRequestError"
        assert [e.name for e in span.events] == ["exception"]


def test_a_disposed_run_ends_its_spans_as_cancelled(
    serve_model: Any, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    _, model = serve_model([[ChatChunk(role="assistant"), ChatChunk(text="Hel"), Hang()]])
    agent = ReactAgent(model, tracer_provider=provider)
    started = threading.Event()
    subscription = agent.stream("Hi").subscribe(
        lambda e: started.set() if isinstance(e, TextDelta) else None  # inside the chat span
    )
    assert started.wait(10)
    subscription.dispose()  # ends the spans synchronously
    spans = _by_name(exporter.get_finished_spans())
    for name in ("invoke_agent", "chat mock"):
        (span,) = spans[name]
        assert (span.attributes or {})["error.type"] == "cancelled"
        assert span.status.status_code is StatusCode.ERROR


def test_the_global_provider_is_used_and_none_means_no_spans(
    serve_model: Any,
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, model = serve_model([text_reply("one"), text_reply("two")])
    agent = ReactAgent(model)
    assert agent.run("Hi").answer == "one"  # no provider anywhere: nothing recorded
    assert exporter.get_finished_spans() == ()
    # trace.set_tracer_provider can be called once per process: stand in for it here.
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    assert agent.run("Hi").answer == "two"
    assert [s.name for s in exporter.get_finished_spans()] == ["chat mock", "invoke_agent"]


def test_tracing_off_adds_nothing_to_a_run() -> None:
    from rxreact import ScriptedModel
    from rxreact.tracing import run_tracer

    agent = ReactAgent(ScriptedModel([text_reply("hi")]))
    assert run_tracer(agent, None) is None  # no provider given, no global one set


def test_each_adapter_names_its_provider() -> None:
    """``gen_ai.provider.name`` follows the wire format, not the class name."""
    from rxreact import AnthropicModel, OpenAIChatModel, OpenAIResponsesModel
    from rxreact.tracing import _provider_name

    where = "http://127.0.0.1:9"
    assert _provider_name(AnthropicModel("m", base_url=where)) == "anthropic"
    assert _provider_name(OpenAIResponsesModel("m", base_url=where + "/v1")) == "openai"
    assert _provider_name(OpenAIChatModel("m", base_url=where + "/v1")) == "openai"
