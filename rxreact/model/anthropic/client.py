""":class:`AnthropicModel`: Anthropic's native Messages API (``POST /v1/messages``).

The Messages wire format on the shared transport (:mod:`rxreact.model.http.model`): the
request body (:mod:`~rxreact.model.anthropic.request_codec`), the stream's events
(:class:`~rxreact.model.anthropic.wire.MessagesStreamParser`) and a whole message
(:func:`~rxreact.model.anthropic.message.parse_message`).

``pause_turn``: the server paused a long turn (server tools). The model sends the follow-up
request itself, with the assistant content so far appended as the last message (as Anthropic
documents), and the follow-up's chunks continue the same stream: the subscriber sees one
response. Each request is an attempt of its own (retried before its own first chunk), and
the usage reported at the end is the sum over the requests::

    stream(request):   --t--t-----------t--t--f--|     first message paused, second ends it
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import httpx
from reactivex import Observable, abc

from rxreact.errors import InvalidArgumentError
from rxreact.messages import ChatRequest
from rxreact.model.anthropic._turn import TurnSubscription
from rxreact.model.anthropic.message import PausedResponse, parse_message
from rxreact.model.anthropic.request_codec import encode_request
from rxreact.model.anthropic.wire import PAUSE_TURN, Carry, MessagesStreamParser
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.http._io_mode import IOMode
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.limits import DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_TOOL_ARGUMENTS
from rxreact.model.http.model import HTTPChatModel
from rxreact.model.retry_policy import Backoff
from rxreact.rx._fused import Fused

__all__ = ["AnthropicModel"]

DEFAULT_BASE_URL = "https://api.anthropic.com"
DEFAULT_VERSION = "2023-06-01"
"""The ``anthropic-version`` sent unless told otherwise."""
NO_SAMPLING_VERSION = "2026-10-21"
"""The first API version that refuses ``temperature``, ``top_p`` and ``top_k``."""
_SAMPLING_OPTIONS = ("temperature", "top_p", "top_k")

Thinking = Mapping[str, Any] | Literal["adaptive"]
"""``{"type": "enabled", "budget_tokens": N}``, ``{"type": "adaptive"}`` or ``"adaptive"``."""


class _PausedTurn(ChatRequest):
    """A request continuing a paused turn: the assistant content so far goes last."""

    assistant_prefix: tuple[dict[str, Any], ...] = ()


class AnthropicModel(HTTPChatModel):
    """A :class:`~rxreact.model.base.ChatModel` over Anthropic's Messages API.

    Args:
        model: the model name; default ``$RXREACT_MODEL``. Missing: :class:`ConfigurationError`.
        base_url: the API root, without ``/v1`` (``https://api.anthropic.com``; a trailing
            ``/v1`` is dropped); default ``$ANTHROPIC_BASE_URL``, else Anthropic's. Requests go
            to ``{base_url}/v1/messages``.
            :class:`~rxreact.testing.MockOpenAIServer` serves it at ``server.origin``.
        api_key: default ``$ANTHROPIC_API_KEY``, sent as ``x-api-key``. Missing: each request
            fails with :class:`ConfigurationError`, except against a loopback host.
        max_tokens: the ``max_tokens`` of every request (the API requires one); a request's
            ``options`` may set its own.
        thinking: extended thinking, passed through as the ``thinking`` field
            (``{"type": "enabled", "budget_tokens": 2048}``, or ``"adaptive"``). The thinking
            text streams as reasoning; the thinking blocks, with their signatures, are kept
            on the assistant message (``replay``) and sent back unchanged, as the API
            requires on tool rounds; another provider's model never gets them.
        cache: prompt caching: ``cache_control`` breakpoints on the system prompt, the tools
            and the last message. The cache counts reach ``Usage`` as
            ``cache_creation_input_tokens`` and ``cache_read_input_tokens``.
        anthropic_version: the ``anthropic-version`` header (default ``"2023-06-01"``).
            From ``"2026-10-21"`` on, the API takes no ``temperature``, ``top_p`` or
            ``top_k``: with such a version, these options are refused here, before any
            request is sent (:class:`~rxreact.errors.InvalidArgumentError`, at construction
            for ``options=``, at the request for a request's own options).
        betas: beta features, sent as one ``anthropic-beta`` header.
        options: body parameters sent with every request (``temperature``, ``top_k``,
            ``stop_sequences``...; anything passes through as given, except
            ``response_format``: see :mod:`~rxreact.model.anthropic.request_codec`). A
            request's own ``options`` win key by key.
        headers: extra request headers (they win over the ones above).
        connect_timeout, first_chunk_timeout, chunk_timeout, max_retries, backoff, http_client,
        io, io_scheduler, max_line_bytes, max_tool_arguments: the transport's, as for
            :class:`~rxreact.model.openai.client.OpenAIChatModel`. Retried before the first
            chunk: 429, 5xx (Anthropic's 529 "overloaded" too, honouring ``retry-after``), an
            ``overloaded_error`` or ``api_error`` event, a cut stream.

    Errors: HTTP statuses map onto :class:`~rxreact.errors.ModelHTTPError` subclasses with
    Anthropic's message; an ``error`` event after the first chunk is a
    :class:`~rxreact.errors.ProviderStreamError` with Anthropic's ``error_type``; a stream
    that ends before ``message_stop`` is a :class:`~rxreact.errors.StreamInterruptedError`.
    Finish reasons are ours (``end_turn`` → ``stop``, ``tool_use`` → ``tool_calls``,
    ``max_tokens`` → ``length``, ``refusal`` → ``content_filter``), Anthropic's kept as
    ``provider_finish_reason``. ``pause_turn`` is continued by the model (module docstring).
    """

    path = "/v1/messages"
    provider = "anthropic"
    api_key_env = "ANTHROPIC_API_KEY"
    base_url_env = "ANTHROPIC_BASE_URL"
    default_base_url = DEFAULT_BASE_URL
    max_pause_turns = 10
    """Follow-up requests of one paused turn; past them the answer ends as ``length``."""

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
        thinking: Thinking | None = None,
        cache: bool = False,
        anthropic_version: str = DEFAULT_VERSION,
        betas: Sequence[str] = (),
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
        base_url = (base_url or os.environ.get(self.base_url_env) or "").rstrip("/") or None
        if base_url is not None and base_url.endswith("/v1"):
            base_url = base_url[: -len("/v1")]  # the path carries the version: never /v1/v1
        if not isinstance(anthropic_version, str) or not anthropic_version:
            raise InvalidArgumentError("anthropic_version must be a non-empty str")
        self._sampling_refused = anthropic_version >= NO_SAMPLING_VERSION  # ISO dates sort
        self.anthropic_version = anthropic_version
        if self._sampling_refused:
            _check_sampling(options or {}, anthropic_version, "options=")
        fixed = {"anthropic-version": anthropic_version}
        if betas:
            fixed["anthropic-beta"] = ",".join(betas)
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            connect_timeout=connect_timeout,
            first_chunk_timeout=first_chunk_timeout,
            chunk_timeout=chunk_timeout,
            max_retries=max_retries,
            backoff=backoff,
            headers={**fixed, **(headers or {})},
            http_client=http_client,
            io=io,
            io_scheduler=io_scheduler,
            options=options,
            max_line_bytes=max_line_bytes,
            max_tool_arguments=max_tool_arguments,
        )
        self.max_tokens = max_tokens
        self.thinking: dict[str, Any] | None = (
            {"type": "adaptive"}
            if thinking == "adaptive"
            else None
            if thinking is None
            else dict(thinking)
        )
        self.cache = cache

    def stream(self, request: ChatRequest) -> Observable[ChatChunk]:
        """Stream one response as normalized chunks (see
        :meth:`HTTPChatModel.stream <rxreact.model.http.model.HTTPChatModel.stream>`),
        continuing a paused turn with follow-up requests as one stream (module docstring).
        """

        def subscribe(
            observer: abc.ObserverBase[ChatChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            subscription = TurnSubscription(self, request, _continued, observer, scheduler)
            subscription.start()
            return subscription

        return Fused(subscribe)

    def complete(self, request: ChatRequest) -> ModelResponse:
        """Request one whole response (blocking, non-streaming), continuing a paused turn as
        :meth:`stream` does; the result equals the assembled stream."""
        parts = [super().complete(request)]
        carry = Carry()
        while isinstance(parts[-1], PausedResponse) and len(parts) <= self.max_pause_turns:
            carry.content += parts[-1].content_blocks
            parts.append(super().complete(_continued(request, carry)))
        return _joined(parts)

    def _body(self, request: ChatRequest, stream: bool) -> dict[str, Any]:
        if self._sampling_refused:
            _check_sampling(self.options, self.anthropic_version, "the model's options")
            _check_sampling(request.options, self.anthropic_version, "the request's options")
        return encode_request(
            request,
            model=self.model,
            stream=stream,
            max_tokens=self.max_tokens,
            thinking=self.thinking,
            cache=self.cache,
            default_options=self.options,
            assistant_prefix=list(request.assistant_prefix)
            if isinstance(request, _PausedTurn)
            else None,
        )

    def _auth_headers(self, key: str) -> dict[str, str]:
        return {"x-api-key": key}

    def _stream_parser(self) -> StreamParser:
        return MessagesStreamParser()

    def _parse_response(self, body: bytes) -> ModelResponse:
        return parse_message(body)


def _check_sampling(options: Mapping[str, Any], version: str, where: str) -> None:
    """Refuse the sampling options a version of the API no longer takes, in our terms (the
    API's own 400 would come only after a round trip, and name no rxreact setting)."""
    refused = [key for key in _SAMPLING_OPTIONS if key in options]
    if refused:
        raise InvalidArgumentError(
            f"anthropic_version {version!r} takes no {', '.join(refused)}: remove "
            f"{'it' if len(refused) == 1 else 'them'} from {where}, or use "
            f"anthropic_version='{DEFAULT_VERSION}'"
        )


def _continued(request: ChatRequest, carry: Carry) -> _PausedTurn:
    return _PausedTurn.model_construct(
        messages=request.messages,
        tools=request.tools,
        tool_choice=request.tool_choice,
        options=request.options,
        assistant_prefix=tuple(carry.content),
    )


def _joined(parts: list[ModelResponse]) -> ModelResponse:
    """The responses of one paused and continued turn as one."""
    if len(parts) == 1 and not isinstance(parts[0], PausedResponse):
        return parts[0]
    usage = None
    for part in parts:
        if part.usage is not None:
            usage = part.usage if usage is None else usage + part.usage
    last = parts[-1]
    paused = isinstance(last, PausedResponse)
    return ModelResponse(
        content="".join(p.content or "" for p in parts) or None,
        reasoning="\n\n".join(p.reasoning for p in parts if p.reasoning) or None,
        tool_calls=tuple(c for p in parts for c in p.tool_calls),
        finish_reason="length" if paused else last.finish_reason,
        usage=usage,
        replay=tuple(r for p in parts for r in p.replay),
        provider_finish_reason=PAUSE_TURN if paused else last.provider_finish_reason,
    )
