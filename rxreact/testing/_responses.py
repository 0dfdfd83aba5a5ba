"""The Responses API dialect of the mock server (``POST /v1/responses``).

Streams are written as the real API's events: ``response.created``, ``response.in_progress``,
then per output item ``output_item.added``, its deltas and its ``.done`` events, and a
terminal ``response.completed`` (``response.incomplete`` for a ``length`` or
``content_filter`` finish), every event with its ``sequence_number``. Scripted reasoning
becomes a ``reasoning`` item with a summary and an ``encrypted_content`` that the mock signs,
so that it can tell, when the item comes back, that it came back unchanged. A script's
:class:`~rxreact.model.scripted.replies.Fail` is an ``error`` event, then ``response.failed``.
A function call that follows a reasoning item has that item's id after an ``@`` in its
``call_id`` (``call_0@rs_mock_1_0``), so that the mock can tell when a history drops the
reasoning a call needs. At ``/llama-server/v1/responses`` the same dialect is as strict as
llama.cpp's server: every input item must carry its ``type``. The stream's events are written by
:mod:`rxreact.testing._responses_writer`; the requests it refuses, as the real API does, are
:mod:`rxreact.testing._responses_request`'s.
"""

from __future__ import annotations

from typing import Any

from rxreact.messages import ChatRequest
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta
from rxreact.model.http.sse import SSEDecoder
from rxreact.model.openai.responses_wire import ResponsesParser
from rxreact.testing._dialect import kind_in_body
from rxreact.testing._responses_request import decode_request, request_problem
from rxreact.testing._responses_writer import ResponseWriter
from rxreact.testing._wire import error_body

__all__ = ["LLAMA_SERVER_RESPONSES", "RESPONSES"]


class _Responses:
    """``POST /v1/responses``."""

    path = "/responses"

    def kind(self, body: dict[str, Any], path: str) -> tuple[bool, str]:
        return kind_in_body(body)

    def decode(self, body: dict[str, Any]) -> ChatRequest:
        return decode_request(body)

    def problem(self, body: dict[str, Any]) -> str | None:
        return request_problem(body)

    def writer(self, model: str, number: int) -> ResponseWriter:
        return ResponseWriter(model, number)

    def response(self, response: ModelResponse, model: str, number: int) -> dict[str, Any]:
        writer = ResponseWriter(model, number)
        writer.start()
        if response.reasoning:
            writer.chunk(ChatChunk(reasoning=response.reasoning))
        if response.content:
            writer.chunk(ChatChunk(text=response.content))
        for i, call in enumerate(response.tool_calls):
            writer.chunk(
                ChatChunk(tool_calls=(ToolCallDelta(i, call.id, call.name, call.arguments),))
            )
        writer.chunk(ChatChunk(finish_reason=response.finish_reason, usage=response.usage))
        writer.end()  # the items written are the whole response's output
        return writer.final()

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        body = error_body(status, message)
        body["error"]["param"] = None
        return body

    def assemble(self, data: bytes) -> ModelResponse:
        decoder, parser, chunks = SSEDecoder(), ResponsesParser(), []
        for event in decoder.feed(data) + decoder.close():
            chunk = parser.parse(event.data, event.event)
            if chunk is not None:
                chunks.append(chunk)
            if parser.done:
                break
        return assemble(chunks)


RESPONSES = _Responses()
"""The Responses API dialect."""


class _LlamaServerResponses(_Responses):
    """``POST /llama-server/v1/responses``: the Responses API as llama.cpp's ``llama-server``
    takes it (and LiteLLM in front of it): an input item without its ``type`` is refused with
    HTTP 400 "Cannot determine type of 'item'", where OpenAI reads a ``role`` as a message."""

    path = "/llama-server/v1/responses"

    def problem(self, body: dict[str, Any]) -> str | None:
        return request_problem(body, typed_items=True)


LLAMA_SERVER_RESPONSES = _LlamaServerResponses()
"""The strict Responses dialect: every input item typed (base URL
``origin + "/llama-server/v1"``)."""
