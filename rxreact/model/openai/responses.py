""":class:`OpenAIResponsesModel`: OpenAI's ``/responses`` API, and the servers that speak it.

The Responses wire format on the shared transport (:mod:`rxreact.model.http.model`): the
request body (:mod:`~rxreact.model.openai.responses_codec`), the stream's events
(:class:`~rxreact.model.openai.responses_wire.ResponsesParser`) and a whole response
(:func:`~rxreact.model.openai.responses_wire.parse_response`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from reactivex import abc

from rxreact.messages import ChatRequest
from rxreact.model.chunks import ModelResponse
from rxreact.model.http._io_mode import IOMode
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.limits import DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_TOOL_ARGUMENTS
from rxreact.model.http.model import HTTPChatModel
from rxreact.model.openai.responses_codec import encode_request
from rxreact.model.openai.responses_wire import ResponsesParser, parse_response
from rxreact.model.retry_policy import Backoff

__all__ = ["OpenAIResponsesModel"]


class OpenAIResponsesModel(HTTPChatModel):
    """A :class:`~rxreact.model.base.ChatModel` over the OpenAI Responses API (``/responses``).

    For OpenAI's reasoning models this is the native API: their reasoning survives tool rounds
    and turns. Each reasoning item comes back on the assistant message as an opaque
    :class:`~rxreact.messages.ReplayItem` (provider ``"openai-responses"``; never shown in
    events or text) and is sent back, unchanged, on the next request of the conversation; a
    conversation continued on another model drops them. The reasoning summary streams as
    reasoning. The same class speaks to Azure OpenAI's ``/openai/v1`` root and to the open
    servers that implement the API (vLLM, Ollama, llama.cpp's ``llama-server``, LiteLLM).

    Args:
        model: the model name; default ``$RXREACT_MODEL``. Missing: :class:`ConfigurationError`.
        base_url: the API root (``.../v1``); default ``$OPENAI_BASE_URL``, else OpenAI's.
        api_key: default ``$OPENAI_API_KEY``; not needed against a loopback host.
        reasoning: the ``reasoning`` request object, passed through
            (``{"effort": "low", "summary": "auto"}``: a summary to stream as reasoning).
        store: the ``store`` request field. ``False`` (the default) keeps nothing on the
            provider's side and asks for ``include: ["reasoning.encrypted_content"]``, so that
            reasoning items can be replayed; ``True`` lets the provider keep the responses (a
            reasoning item without encrypted content is then replayed by its id).
        options: body parameters sent with every request (``max_output_tokens``,
            ``temperature``, ``text``...); a request's own ``options`` win key by key. A
            ``response_format`` option (what :class:`~rxreact.LLMJudge` and typed answers
            send) is translated to the API's structured output, ``text.format``.
        connect_timeout, first_chunk_timeout, chunk_timeout, max_retries, backoff, headers,
        http_client, io, io_scheduler, max_line_bytes, max_tool_arguments: the transport's,
            as for :class:`~rxreact.model.openai.client.OpenAIChatModel`. Retries cover the
            overload and server errors the API sends as an in-stream ``error`` event before
            the first delta, as well as HTTP 429 and 5xx.

    Example::

        from rxreact import OpenAIResponsesModel, ReactAgent

        model = OpenAIResponsesModel(reasoning={"effort": "low", "summary": "auto"})
        print(ReactAgent(model).call("Say hello."))
    """

    path = "/responses"
    provider = "openai"
    api_key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = "https://api.openai.com/v1"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        reasoning: Mapping[str, Any] | None = None,
        store: bool = False,
        options: Mapping[str, Any] | None = None,
        connect_timeout: float | None = 10.0,
        first_chunk_timeout: float | None = 60.0,
        chunk_timeout: float | None = 60.0,
        max_retries: int = 2,
        backoff: Backoff | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        io: IOMode | None = None,
        io_scheduler: abc.SchedulerBase | None = None,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        max_tool_arguments: int | None = DEFAULT_MAX_TOOL_ARGUMENTS,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            connect_timeout=connect_timeout,
            first_chunk_timeout=first_chunk_timeout,
            chunk_timeout=chunk_timeout,
            max_retries=max_retries,
            backoff=backoff,
            headers=headers,
            http_client=http_client,
            io=io,
            io_scheduler=io_scheduler,
            options=options,
            max_line_bytes=max_line_bytes,
            max_tool_arguments=max_tool_arguments,
        )
        self.reasoning: dict[str, Any] | None = None if reasoning is None else dict(reasoning)
        """The ``reasoning`` object sent with every request (``None``: not sent)."""
        self.store = store
        """The ``store`` field sent with every request."""

    def _body(self, request: ChatRequest, stream: bool) -> dict[str, Any]:
        return encode_request(
            request,
            model=self.model,
            stream=stream,
            reasoning=self.reasoning,
            store=self.store,
            default_options=self.options,
        )

    def _stream_parser(self) -> StreamParser:
        return ResponsesParser()

    def _parse_response(self, body: bytes) -> ModelResponse:
        return parse_response(body)
