"""The transport every wire format shares: :class:`HTTPChatModel`, one POST and its SSE answer.

A model adapter is a wire format on this transport: a subclass says where to POST
(:attr:`~HTTPChatModel.path`), how to authenticate (:meth:`~HTTPChatModel._auth_headers`), how to
encode a request (:meth:`~HTTPChatModel._body`) and how to read the answer (a
:class:`~rxreact.model.http.codec.StreamParser` per streamed response,
:meth:`~HTTPChatModel._parse_response` for a whole one). Everything else is here, once: both I/O
modes, the chunked fast path, retries before the first chunk, the three timeouts, the size caps,
cancellation that closes the connection, and the error mapping.

Errors reach the subscriber as :mod:`rxreact.errors` (see that tree): HTTP statuses through
:func:`~rxreact.errors.http_error_for_status` with the provider's own message, in-stream
errors as the parser raises them, and httpx's transport errors through
:func:`~rxreact.model.http._errors.transport_error`, the one place that maps them. The API key
never appears in a repr, a log line or an exception message: messages are built from our own
fields, and anything quoted from a provider has the key masked.

Threads, timers and cancellation: :mod:`rxreact.model.http._call` (what the I/O modes share),
:mod:`rxreact.model.http._thread_call` (thread mode) and :mod:`rxreact.model.http._aio` (loop
mode). The constructor's settings are checked by :mod:`rxreact.model.http._arguments`. The
module stays past 300 lines because it is the one class every wire format subclasses: the
transport's arguments, the hooks a subclass fills and the attempts the exchange calls belong
together.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import httpx
from reactivex import Observable, abc

from rxreact._closeable import Closeable
from rxreact.errors import ConfigurationError
from rxreact.messages import ChatRequest
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.http._aio import LoopCall, on_io_loop
from rxreact.model.http._arguments import check_model_arguments, resolve_model_and_url
from rxreact.model.http._call import Timeouts
from rxreact.model.http._endpoint import Endpoint
from rxreact.model.http._errors import (
    NOT_A_STREAM_TYPES,
    not_a_stream,
)
from rxreact.model.http._exchange import Exchange
from rxreact.model.http._io_mode import IOMode, io_mode
from rxreact.model.http._read_sse import aread_sse, read_sse
from rxreact.model.http._thread_call import IO_SCHEDULER, ThreadCall
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.limits import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_MAX_TOOL_ARGUMENTS,
    StreamLimits,
)
from rxreact.model.retry_policy import Backoff
from rxreact.rx._fused import Fused

__all__ = ["HTTPChatModel"]

log: logging.Logger = logging.getLogger("rxreact.model.http")


class HTTPChatModel(Closeable):
    """A :class:`~rxreact.model.base.ChatModel` over one HTTP+SSE wire format (subclass it).

    The constructor's arguments are every adapter's transport arguments; see
    :class:`~rxreact.model.openai.client.OpenAIChatModel` for what each means
    (``api_key_env``, when given, replaces the class's :attr:`api_key_env` for this model: the
    variable the key is read from and the one a missing-key error names). A subclass sets
    the class attributes (where to POST, which environment variables hold the key and the
    base URL) and implements :meth:`_body`, :meth:`_stream_parser` and
    :meth:`_parse_response`.
    """

    path: ClassVar[str] = ""
    """Appended to the base URL: ``/chat/completions``, ``/messages``, ``/responses``."""
    provider: ClassVar[str] = ""
    """The provider's name for tracing (``gen_ai.provider.name``): ``openai``, ``anthropic``."""
    api_key_env: ClassVar[str] = ""
    """The environment variable the key is read from when ``api_key`` is not given."""
    base_url_env: ClassVar[str] = ""
    """The environment variable the base URL is read from when ``base_url`` is not given."""
    default_base_url: ClassVar[str] = ""
    """The provider's own API root."""
    think_tags: bool = False
    """Move a leading ``<think>…</think>`` of the answer text to the reasoning (chat only)."""

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        connect_timeout: float | None = 10.0,
        first_chunk_timeout: float | None = 60.0,
        chunk_timeout: float | None = 60.0,
        max_retries: int = 2,
        backoff: Backoff | None = None,
        headers: Mapping[str, str] | None = None,
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        io: IOMode | None = None,
        io_scheduler: abc.SchedulerBase | None = None,
        options: Mapping[str, Any] | None = None,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        max_tool_arguments: int | None = DEFAULT_MAX_TOOL_ARGUMENTS,
    ) -> None:
        check_model_arguments(
            model=model,
            base_url=base_url,
            api_key=api_key,
            api_key_env=api_key_env,
            timeouts={
                "connect_timeout": connect_timeout,
                "first_chunk_timeout": first_chunk_timeout,
                "chunk_timeout": chunk_timeout,
            },
            max_retries=max_retries,
            backoff=backoff,
            headers=headers,
            http_client=http_client,
            io_scheduler=io_scheduler,
            options=options,
            caps={"max_line_bytes": max_line_bytes, "max_tool_arguments": max_tool_arguments},
        )
        model, base_url = resolve_model_and_url(
            type(self).__name__,
            model,
            base_url or os.environ.get(self.base_url_env) or self.default_base_url,
        )
        self.model: str = model
        self.base_url: str = base_url
        self._timeouts = Timeouts(connect_timeout, first_chunk_timeout, chunk_timeout)
        key_env = api_key_env or self.api_key_env
        self._endpoint = Endpoint(
            f"{base_url}{self.path}",
            base_url,
            api_key or os.environ.get(key_env),
            key_env,
            self._auth_headers,
            headers or {},
            self._timeouts,
            http_client,
        )
        self._max_retries = max_retries
        self._backoff = backoff or Backoff()
        self.options: dict[str, Any] = dict(options or {})
        """Body parameters sent with every request, under the request's own ``options``."""
        self._limits = StreamLimits(max_line_bytes, max_tool_arguments)
        self.io: IOMode = io_mode(io, http_client, io_scheduler)
        """``"thread"`` or ``"loop"``: how this model reads its streams."""
        self._io = io_scheduler or IO_SCHEDULER

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def needs_api_key(self) -> bool:
        """No key is set and the host is not loopback: every request would fail with
        :class:`~rxreact.errors.ConfigurationError`. A command line checks this before it starts."""
        return self._endpoint.key is None and not self._endpoint.keyless_ok

    @property
    def api_key_variable(self) -> str:
        """The environment variable this model reads its key from (``OPENAI_API_KEY``...)."""
        return self._endpoint.key_env

    # -- the wire format: what a subclass implements -----------------------------------------

    def _body(self, request: ChatRequest, stream: bool) -> dict[str, Any]:
        """The JSON body of one request (``self.options`` under the request's own)."""
        raise NotImplementedError

    def _stream_parser(self) -> StreamParser:
        """A new parser for one streamed response."""
        raise NotImplementedError

    def _parse_response(self, body: bytes) -> ModelResponse:
        """A whole (non-streaming) response body."""
        raise NotImplementedError

    def _auth_headers(self, key: str) -> dict[str, str]:
        """The headers that carry the API key (default: ``Authorization: Bearer``)."""
        return {"Authorization": f"Bearer {key}"}

    def _finish_response(self, response: ModelResponse) -> ModelResponse:
        """A whole response as :meth:`complete` returns it (the stream's rules applied)."""
        return response

    # -- the transport ----------------------------------------------------------------------

    def stream(self, request: ChatRequest) -> Observable[ChatChunk]:
        """Stream one response as normalized chunks (cold: one HTTP request per subscription).

        ::

            stream(request):   --r--t--t--t--f--|      [DONE], or the end after a finish reason
            stream(request):   --r--t--t--X            cut, provider error, timeout

            r: the role chunk   t: text / reasoning / tool-call chunks   f: the finish reason

        The request is sent and read on the I/O thread of the model's mode (see the class);
        ``on_next`` is called there.
        Failures before the first chunk are retried (429, 5xx, connection, cut stream);
        after it, every error goes straight to ``on_error``. Disposing closes the connection.
        Errors: :class:`~rxreact.errors.ModelError` subclasses, or
        :class:`~rxreact.errors.ConfigurationError` when no API key is set.

        Args:
            request: the messages, tools and options to send.

        Returns:
            A cold Observable of :class:`~rxreact.model.chunks.ChatChunk`; assembling it gives
            what :meth:`complete` returns for the same reply.
        """

        return self._stream(request, self._stream_parser)

    def _stream(
        self, request: ChatRequest, new_parser: Callable[[], StreamParser]
    ) -> Observable[ChatChunk]:
        """:meth:`stream` with each attempt's parser made by ``new_parser``: a wire format
        that carries state from one request to the next (Anthropic's ``pause_turn``, continued
        by another request) keeps its parsers this way."""

        return Fused(Exchange(self, request, new_parser).subscribe)

    def complete(self, request: ChatRequest) -> ModelResponse:
        """Request one whole response (blocking, non-streaming), with the stream's retry policy.

        Think tags are split as in :meth:`stream`, so the result equals the assembled stream.

        Raises:
            ModelError: a subclass, as for :meth:`stream`.
            ConfigurationError: no API key is set.
        """

        if self.io == "loop" and on_io_loop():
            raise RuntimeError("complete() would block the I/O loop it waits for: use stream()")

        done = threading.Event()
        outcome: list[Any] = []

        def settle(value: Any) -> None:
            outcome.append(value)
            done.set()

        source: Fused[ModelResponse] = Fused(Exchange(self, request, None).subscribe)
        subscription = source.subscribe(
            on_next=outcome.append, on_error=settle, on_completed=done.set
        )
        try:
            done.wait()
        finally:
            subscription.dispose()  # also on KeyboardInterrupt: cancels the request
        result = outcome[-1]
        if isinstance(result, BaseException):
            raise result
        assert isinstance(result, ModelResponse)
        return result

    def close(self) -> None:
        """Close the httpx clients this model created (a later request opens new ones); a
        client passed as ``http_client`` is left open.

        Loop mode: the clients are closed on the I/O loop, waited for unless called from it.
        """
        self._endpoint.clients.close()

    # -- internals --------------------------------------------------------------------------

    # One attempt of each kind, called by :class:`~rxreact.model.http._exchange.Exchange`
    # (methods, not closures: a live run keeps no function objects for them).

    def _attempt_stream(
        self, call: ThreadCall[ChatChunk], content: bytes, new_parser: Callable[[], StreamParser]
    ) -> None:
        with self._endpoint.exchange(call, content, stream=True) as response:
            self._check_stream(response)
            read_sse(response, call, new_parser(), self.think_tags, self._limits)

    async def _aattempt_stream(
        self, call: LoopCall[ChatChunk], content: bytes, new_parser: Callable[[], StreamParser]
    ) -> None:
        async with self._endpoint.aexchange(call, content, stream=True) as response:
            if response.headers.get("content-type", "").startswith(NOT_A_STREAM_TYPES):
                await response.aread()  # the check quotes the body
            self._check_stream(response)
            await aread_sse(response, call, new_parser(), self.think_tags, self._limits)

    def _attempt_complete(self, call: ThreadCall[ModelResponse], content: bytes) -> None:
        with self._endpoint.exchange(call, content, stream=False) as response:
            call.batch_read()  # the headers are the "first chunk" of a whole response
            call.emit(self._finish_response(self._parse_response(response.read())))

    async def _aattempt_complete(self, call: LoopCall[ModelResponse], content: bytes) -> None:
        async with self._endpoint.aexchange(call, content, stream=False) as response:
            call.batch_read()
            call.emit(self._finish_response(self._parse_response(await response.aread())))

    def _encode(self, request: ChatRequest, stream: bool) -> bytes:
        body = self._body(request, stream)
        try:
            return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        except (TypeError, ValueError) as exc:  # an option that is not JSON, say
            raise ConfigurationError(f"the request cannot be sent as JSON: {exc}") from exc

    def _check_stream(self, response: httpx.Response) -> None:
        error = not_a_stream(response, self._endpoint.redact, self._parse_body)
        if error is not None:
            raise error

    def _parse_body(self, text: str) -> object:
        """A JSON body that came where a stream was asked for, read as one event."""
        return self._stream_parser().parse(text, None)
