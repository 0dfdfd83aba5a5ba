"""OpenTelemetry spans for agent runs, by the GenAI semantic conventions (``rxreact[otel]``).

When a tracer provider is configured (``ReactAgent(..., tracer_provider=)``, or the global one
set with ``opentelemetry.trace.set_tracer_provider``) every run emits::

    invoke_agent                      the run: subscribe -> final answer, error or dispose
    ├── chat {model}                  one per model request (round)
    ├── execute_tool {name}           one per tool call (concurrent calls overlap)
    └── chat {model}

Parents are passed explicitly (never the thread's current span): a run's events hop between
the I/O, agent and tool threads, and each span still has the run as its parent. The run's own
parent is the span current where the run was subscribed (e.g. a web request's span).

Errors end a span with status ``ERROR``, ``error.type`` and the exception recorded; a dispose
before the end (cancellation) sets ``error.type="cancelled"``. Message content (prompts,
answers, tool arguments and results) is recorded only when opted in: ``trace_content=True``
or ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``.

With no provider configured, or without the ``opentelemetry-api`` package, a run costs one
check when it starts and nothing per chunk: no operator is added to its pipeline.

The span operator and the optional import are :mod:`rxreact.tracing._spans`; messages as the
conventions record them, :mod:`rxreact.tracing._genai_messages`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from reactivex import Observable

from rxreact.events import FinalAnswer, RoundFinished, ToolResult
from rxreact.messages import ChatRequest, ToolCall, Usage
from rxreact.tracing._genai_messages import input_json, output_json
from rxreact.tracing._spans import otel, spanned

if TYPE_CHECKING:
    from rxreact.agent.react_agent import ReactAgent
    from rxreact.agent.round import RoundState

__all__ = ["CONTENT_ENV", "SCHEMA_URL", "RunTracer", "run_tracer"]

SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"
"""The semantic-conventions version whose GenAI names the spans use."""

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Set to ``true`` to record message content when ``trace_content`` is not given."""


def run_tracer(agent: ReactAgent[Any], conversation_id: str | None) -> RunTracer | None:
    """The tracer of one run, or ``None`` when tracing is off (the common, free case)."""
    trace = otel()
    provider = agent.tracer_provider
    if provider is None:
        if not trace:
            return None
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
            return None
    cached = agent._tracer_cache
    if cached is None or cached[0] is not provider:
        from rxreact import __version__

        tracer = provider.get_tracer("rxreact", __version__, schema_url=SCHEMA_URL)
        cached = agent._tracer_cache = (provider, tracer)
    content = agent.trace_content
    if content is None:
        content = os.environ.get(CONTENT_ENV, "").lower() == "true"
    return RunTracer(cached[1], agent, conversation_id, content)


class RunTracer:
    """Opens the spans of one run; each method wraps an Observable in a span."""

    def __init__(
        self, tracer: Any, agent: ReactAgent[Any], conversation_id: str | None, content: bool
    ) -> None:
        self._tracer = tracer
        self._trace = otel()
        self.content = content
        model = agent.model
        self._model_name: str | None = getattr(model, "model", None)
        self._provider = _provider_name(model)
        self._conversation_id = conversation_id
        self._run_context: Any = None

    def _common(self, operation: str) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": self._provider,
        }
        if self._model_name:
            attributes["gen_ai.request.model"] = self._model_name
        return attributes

    def run(self, events: Observable[Any]) -> Observable[Any]:
        """``invoke_agent``: the whole run, a child of the span current at subscribe time."""

        def start() -> Any:
            attributes = self._common("invoke_agent")
            attributes["gen_ai.agent.name"] = "rxreact"
            if self._conversation_id is not None:
                attributes["gen_ai.conversation.id"] = self._conversation_id
            span = self._tracer.start_span("invoke_agent", kind=self._trace.SpanKind.INTERNAL)
            span.set_attributes(attributes)
            self._run_context = self._trace.set_span_in_context(span)
            return span

        def on_event(span: Any, event: Any) -> None:
            if isinstance(event, FinalAnswer) and not event.path:  # not an agent tool's
                _set_usage(span, event.usage)
                if self.content:
                    span.set_attribute("gen_ai.output.messages", output_json(event.text, []))

        return spanned(events, start, on_event)

    def round(
        self, events: Observable[Any], request: ChatRequest, state: RoundState
    ) -> Observable[Any]:
        """``chat {model}``: one model request, from sending it to its ``round_finished``."""

        def start() -> Any:
            name = f"chat {self._model_name}" if self._model_name else "chat"
            span = self._tracer.start_span(
                name, context=self._run_context, kind=self._trace.SpanKind.CLIENT
            )
            span.set_attributes(self._common("chat"))
            if self.content:
                span.set_attribute("gen_ai.input.messages", input_json(request))
            return span

        def on_event(span: Any, event: Any) -> None:
            if isinstance(event, RoundFinished):
                if event.finish_reason is not None:
                    span.set_attribute("gen_ai.response.finish_reasons", [event.finish_reason])
                _set_usage(span, event.usage)
                if self.content:
                    output = output_json(state.text, state.tool_calls())
                    span.set_attribute("gen_ai.output.messages", output)

        return spanned(events, start, on_event)

    def tool(self, call: ToolCall, events: Observable[Any]) -> Observable[Any]:
        """``execute_tool {name}``: one tool call, to its ``tool_result``."""

        def start() -> Any:
            span = self._tracer.start_span(
                f"execute_tool {call.name}",
                context=self._run_context,
                kind=self._trace.SpanKind.INTERNAL,
            )
            span.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call.name,
                    "gen_ai.tool.call.id": call.id,
                    "gen_ai.tool.type": "function",
                }
            )
            if self.content:
                span.set_attribute("gen_ai.tool.call.arguments", call.arguments)
            return span

        def on_event(span: Any, event: Any) -> None:
            if isinstance(event, ToolResult):
                if self.content:
                    span.set_attribute("gen_ai.tool.call.result", event.content)
                if event.is_error:
                    span.set_attribute("error.type", "tool_error")
                    span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, "tool error"))

        # Current while the call is subscribed: an async tool's task (an MCP call) copies
        # that context, so its own spans, and the traceparent the MCP SDK sends, nest here.
        return spanned(events, start, on_event, current=True)

    def guardrail(self, name: str, kind: str, check: Observable[Any]) -> Observable[Any]:
        """``execute_guardrail {name}``: one check of an input or output guardrail."""

        def start() -> Any:
            span = self._tracer.start_span(
                f"execute_guardrail {name}",
                context=self._run_context,
                kind=self._trace.SpanKind.INTERNAL,
            )
            span.set_attributes(
                {
                    "gen_ai.operation.name": "execute_guardrail",
                    "rxreact.guardrail.name": name,
                    "rxreact.guardrail.kind": kind,
                }
            )
            return span

        def on_event(span: Any, result: Any) -> None:
            tripped = bool(getattr(result, "tripped", False))
            span.set_attribute("rxreact.guardrail.tripped", tripped)
            if tripped:
                span.set_attribute("error.type", "guardrail_tripped")
                reason = str(getattr(result, "reason", ""))
                span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, reason))

        return spanned(check, start, on_event, current=True)


def _set_usage(span: Any, usage: Usage | None) -> None:
    if usage is None:
        return
    if usage.prompt_tokens is not None:
        span.set_attribute("gen_ai.usage.input_tokens", usage.prompt_tokens)
    if usage.completion_tokens is not None:
        span.set_attribute("gen_ai.usage.output_tokens", usage.completion_tokens)


def _provider_name(model: Any) -> str:
    for attribute in ("provider_name", "provider"):  # a user's model, or an HTTP adapter's
        named = getattr(model, attribute, None)
        if isinstance(named, str) and named:
            return named
    kind = type(model).__name__
    return "openai" if kind.startswith("OpenAI") else kind
