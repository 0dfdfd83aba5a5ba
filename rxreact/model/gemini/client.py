""":class:`GeminiModel`: Gemini's native API, ``generateContent`` and ``streamGenerateContent``.

The wire format on the shared transport (:mod:`rxreact.model.http.model`): the request body
(:mod:`~rxreact.model.gemini.request_codec`) and the responses, streamed or whole
(:mod:`~rxreact.model.gemini.wire`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx
from reactivex import abc

from rxreact.errors import InvalidArgumentError
from rxreact.messages import ChatRequest
from rxreact.model.chunks import ModelResponse
from rxreact.model.gemini.request_codec import encode_request
from rxreact.model.gemini.wire import GeminiStreamParser, parse_response
from rxreact.model.http._io_mode import IOMode
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.limits import DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_TOOL_ARGUMENTS
from rxreact.model.http.model import HTTPChatModel
from rxreact.model.retry_policy import Backoff

__all__ = ["DEFAULT_BASE_URL", "GeminiModel"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"


class GeminiModel(HTTPChatModel):
    """A :class:`~rxreact.model.base.ChatModel` over Gemini's native API (``v1beta``).

    Args:
        model: the model name (``gemini-2.5-flash``; a leading ``models/`` is dropped);
            default ``$RXREACT_MODEL``. Missing: :class:`ConfigurationError`.
        api_key: default ``$GEMINI_API_KEY``, sent as ``x-goog-api-key``. Missing: each
            request fails with :class:`ConfigurationError`, except against a loopback host.
        base_url: the API root (``https://generativelanguage.googleapis.com``; a trailing
            ``/v1beta`` is dropped); default ``$GEMINI_BASE_URL``, else Google's. Streams go
            to ``{base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse``, whole
            answers to ``...:generateContent``. :class:`~rxreact.testing.MockOpenAIServer`
            serves both at ``server.origin``.
        thinking: the ``thinkingConfig`` of every request (``{"thinkingBudget": 1024,
            "includeThoughts": True}``, ``{"thinkingLevel": "low"}``); with
            ``includeThoughts`` the thought summaries stream as reasoning. Thought
            signatures are kept on the assistant message (``replay``) and sent back
            unchanged, as Gemini 3 requires on tool rounds; another provider never gets them.
        options: body parameters of every request: chat-style names (``temperature``,
            ``max_tokens``, ``top_p``, ``stop``...) and ``generationConfig``'s own go into
            ``generationConfig``, anything else (``safetySettings``) is sent as a top-level
            field. A request's own ``options`` win key by key.
        headers, connect_timeout, first_chunk_timeout, chunk_timeout, max_retries, backoff,
        http_client, io, io_scheduler, max_line_bytes, max_tool_arguments: the transport's,
            as for :class:`~rxreact.model.openai.client.OpenAIChatModel`. Retried before the
            first chunk: 429, 5xx, an ``UNAVAILABLE`` / ``RESOURCE_EXHAUSTED`` / ``INTERNAL``
            error event, a cut stream.

    Errors: HTTP statuses map onto :class:`~rxreact.errors.ModelHTTPError` subclasses with
    Google's message; a blocked prompt or answer is a :class:`~rxreact.errors.ContentBlockedError`
    (not retried); a stream that ends before a ``finishReason`` is a
    :class:`~rxreact.errors.StreamInterruptedError`. Finish reasons are ours (``STOP`` →
    ``stop`` or ``tool_calls``, ``MAX_TOKENS`` → ``length``), Gemini's kept as
    ``provider_finish_reason``.
    """

    path = "/v1beta/models"
    provider = "gcp.gemini"
    api_key_env = "GEMINI_API_KEY"
    base_url_env = "GEMINI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        thinking: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        connect_timeout: float | None = 10.0,
        first_chunk_timeout: float | None = 60.0,
        chunk_timeout: float | None = 60.0,
        max_retries: int = 2,
        backoff: Backoff | None = None,
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        io: IOMode | None = None,
        io_scheduler: abc.SchedulerBase | None = None,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        max_tool_arguments: int | None = DEFAULT_MAX_TOOL_ARGUMENTS,
    ) -> None:
        if thinking is not None and not isinstance(thinking, Mapping):
            raise InvalidArgumentError(
                f"thinking must be a mapping (a thinkingConfig), got {type(thinking).__name__}"
            )
        base_url = (base_url or os.environ.get(self.base_url_env) or "").rstrip("/") or None
        if base_url is not None and base_url.endswith("/v1beta"):
            base_url = base_url[: -len("/v1beta")]  # the path carries the version
        if isinstance(model, str):
            model = model.removeprefix("models/")
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
        self.model: str = self.model.removeprefix("models/")
        models = f"{self.base_url}{self.path}/{quote(self.model, safe='.-_')}"
        self._endpoint.retarget(
            f"{models}:streamGenerateContent?alt=sse", f"{models}:generateContent"
        )
        self.thinking: dict[str, Any] | None = None if thinking is None else dict(thinking)

    def _body(self, request: ChatRequest, stream: bool) -> dict[str, Any]:
        return encode_request(
            request, thinking=self.thinking, default_options=self.options, model=self.model
        )

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"x-goog-api-key": key}

    def _stream_parser(self) -> StreamParser:
        return GeminiStreamParser()

    def _parse_response(self, body: bytes) -> ModelResponse:
        return parse_response(body)
