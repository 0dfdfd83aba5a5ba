""":class:`OpenAIChatModel`: any OpenAI-compatible ``/chat/completions`` endpoint, over httpx.

Errors reach the subscriber as :mod:`rxreact.errors` (see that tree): HTTP statuses through
:func:`~rxreact.errors.http_error_for_status` with the provider's own message, in-stream
errors as :func:`~rxreact.model.openai.wire.parse_chunk` raises them, and httpx's transport
errors through :func:`~rxreact.model.openai._http_errors.transport_error`, the one place that
maps them. The API key never appears in a repr, a log line or an exception message: messages
are built from our own fields, and anything quoted from a provider has the key masked.

Threads, timers and cancellation: see :class:`OpenAIChatModel`, :mod:`rxreact.model.openai._call`
(what the I/O modes share), :mod:`rxreact.model.openai._thread_call` (thread mode) and
:mod:`rxreact.model.openai._aio` (loop mode).
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from typing import Any, TypeVar

import httpx
from reactivex import Observable, abc

from rxreact._closeable import Closeable
from rxreact._fused import Fused
from rxreact.errors import ConfigurationError
from rxreact.messages import ChatRequest
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.openai._aio import LoopCall, on_io_loop, run_on_io_loop
from rxreact.model.openai._call import CallSettings, ModelCall, Timeouts
from rxreact.model.openai._clients import ModelClients, no_tls
from rxreact.model.openai._http_errors import (
    NOT_A_STREAM_TYPES,
    not_a_stream,
    status_error,
    transport_error,
)
from rxreact.model.openai._http_stream import aread_sse, read_sse
from rxreact.model.openai._io_mode import DEFAULT_IO, IOMode, io_mode
from rxreact.model.openai._pooled import pooled_socket
from rxreact.model.openai._reclaim import reclaim
from rxreact.model.openai._thread_call import IO_SCHEDULER, ThreadCall
from rxreact.model.openai.limits import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_MAX_TOOL_ARGUMENTS,
    StreamLimits,
)
from rxreact.model.openai.request_codec import encode_request
from rxreact.model.openai.think import split_think
from rxreact.model.openai.wire import parse_completion
from rxreact.model.retry_policy import Backoff
from rxreact.scheduling import timer_scheduler

__all__ = ["DEFAULT_IO", "OpenAIChatModel", "run_on_io_loop"]

_T = TypeVar("_T")
log: logging.Logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class _Secret:
    """Holds the API key; its repr never shows it (so ``vars(model)`` is safe to print)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "_Secret('***')"


class OpenAIChatModel(Closeable):
    """A :class:`~rxreact.model.base.ChatModel` over an OpenAI-compatible chat-completions API.

    Args:
        model: the model name; default ``$RXREACT_MODEL``. Missing: :class:`ConfigurationError`.
        base_url: the API root (``.../v1``); default ``$OPENAI_BASE_URL``, else OpenAI's.
        api_key: default ``$OPENAI_API_KEY``. Missing: each request fails with
            :class:`ConfigurationError`, except against a loopback host (local servers and
            :class:`~rxreact.testing.MockOpenAIServer` need none; no ``Authorization`` is sent).
        connect_timeout: seconds to open a connection.
        first_chunk_timeout: seconds from the start of an attempt to the first SSE event
            (for :meth:`complete`, to the response headers).
        chunk_timeout: the longest silence, in seconds, between two events.
            Each limit may be ``None`` (none); each ends in :class:`ModelTimeoutError`.
        max_retries: retries of a failed attempt (429, 5xx, connection errors, a cut stream),
            made only while nothing of the response was emitted.
        backoff: the waits between retries (default ``Backoff()``: 0.5 s doubling, capped at
            8 s, no jitter). A ``Retry-After`` (429 or 5xx) is waited for up to
            ``Backoff.max_retry_wait`` (default: the cap); a longer one fails at once, the
            error carrying ``retry_after``.
        send_reasoning: echo assistant reasoning as ``reasoning_content`` (DeepSeek thinking
            mode wants it on tool rounds; other providers may reject it).
        think_tags: move a leading ``<think>…</think>`` in the answer text to the reasoning.
        include_usage: ask streams for a trailing usage chunk.
        headers: extra request headers.
        http_client: an ``httpx.Client`` (thread mode) or ``httpx.AsyncClient`` (loop mode) to
            use and not close; default: one of our own, created on first use and closed by
            :meth:`close`. An ``AsyncClient`` is used on rxreact's I/O loop only, so close it
            there: ``rxreact.model.openai.client.run_on_io_loop(client.aclose())``.
        io: ``"thread"`` or ``"loop"`` (below). Default: what ``http_client`` or
            ``io_scheduler`` implies, else ``$RXREACT_IO``, else :data:`DEFAULT_IO`.
        io_scheduler: thread mode: where attempts run; default one new daemon thread each.
        options: body parameters sent with every request (``temperature``, ``max_tokens``,
            ``seed``, ``stop``...; anything passes through as given). A request's own
            ``options`` (the agent's, the run's) win key by key.
        max_line_bytes: the longest SSE line accepted (default 8 MiB).
        max_tool_arguments: the most tool-call argument characters in one response
            (default 1 Mi). Past either cap the stream ends with
            :class:`~rxreact.errors.ResponseTooLargeError` (see
            :mod:`rxreact.model.openai.limits`); ``None`` lifts it.

    I/O modes (``on_next`` of :meth:`stream` is called on the I/O thread of the mode):

    - ``"loop"``: every stream of the process is read on ONE asyncio event loop, on one
      daemon thread (``rxreact-io``), with an ``httpx.AsyncClient``. Threads stay at one
      however many streams run; a completed stream's connection goes back to the pool. A
      subscriber must not block ``on_next`` (it would stall every stream): hand chunks over
      with :func:`~rxreact.operators.deliver_on`, which the agent does and which holds a
      slow consumer's stream back cooperatively, without blocking the loop.
    - ``"thread"``: each request attempt reads with the blocking ``httpx.Client`` on its own
      daemon thread (``rxreact-http``). Blocking in ``on_next`` holds back only that stream.
      A stream completes once the end of its body is read, so its connection is back in the
      pool for the next request.

    Both modes read the usual chunked HTTP/1.1 body in whole socket reads
    (:mod:`rxreact.model.openai._chunked`). Without ``http_client``, a model makes its own
    clients as concurrency needs them, a few connections each
    (:mod:`rxreact.model.openai._clients`).

    The default is loop mode, by measurement (2 cores, BENCHMARKS.md): for one conversation it
    costs about what thread mode costs (0.47x and 0.44x the async httpx floor's CPU per chunk
    in one run; a short conversation 0.88-1.03x the floor's), and at a thousand concurrent
    agent runs it holds 28 threads where thread mode holds one per stream, with about 0.9x the
    floor's CPU per paced chunk where thread mode needed 2.2x. A subscriber that blocks
    ``on_next`` of the model stream itself stalls every stream in loop mode: the agent never
    does (it hands chunks to its pool with :func:`~rxreact.operators.deliver_on`, and a
    blocked pool thread is replaced within milliseconds); code that subscribes to
    ``model.stream`` directly and blocks should do the same, or choose ``io="thread"``.
    """

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        connect_timeout: float | None = 10.0,
        first_chunk_timeout: float | None = 60.0,
        chunk_timeout: float | None = 60.0,
        max_retries: int = 2,
        backoff: Backoff | None = None,
        send_reasoning: bool = False,
        think_tags: bool = True,
        include_usage: bool = True,
        headers: dict[str, str] | None = None,
        http_client: httpx.Client | httpx.AsyncClient | None = None,
        io: IOMode | None = None,
        io_scheduler: abc.SchedulerBase | None = None,
        options: Mapping[str, Any] | None = None,
        max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES,
        max_tool_arguments: int | None = DEFAULT_MAX_TOOL_ARGUMENTS,
    ) -> None:
        model = model or os.environ.get("RXREACT_MODEL")
        if not model:
            raise ConfigurationError(
                "no model name: pass OpenAIChatModel(model=...) or set RXREACT_MODEL"
            )
        base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")
        try:
            url = httpx.URL(base_url)
        except httpx.InvalidURL:
            url = None
        if url is None or url.scheme not in ("http", "https") or not url.host:
            raise ConfigurationError(f"base_url must be an http(s) URL, got {base_url!r}")
        if max_retries < 0:
            raise ConfigurationError("max_retries must be >= 0")
        self.model = model
        self.base_url = base_url
        self._url = f"{base_url}/chat/completions"
        self._origin = f"{url.host}:{url.port or (443 if url.scheme == 'https' else 80)}"
        key = api_key or os.environ.get("OPENAI_API_KEY")
        self._api_key = _Secret(key) if key else None
        self._keyless_ok = _is_loopback(url.host)
        # A local server over plain HTTP: no CA bundle to read for our clients.
        plain_local = self._keyless_ok and url.scheme == "http"
        verify = no_tls if plain_local else httpx.create_ssl_context
        self._timeouts = Timeouts(connect_timeout, first_chunk_timeout, chunk_timeout)
        self._max_retries = max_retries
        self._backoff = backoff or Backoff()
        self._send_reasoning = send_reasoning
        self._think_tags = think_tags
        self._include_usage = include_usage
        self._headers = dict(headers or {})
        self.options: dict[str, Any] = dict(options or {})
        """Body parameters sent with every request, under the request's own ``options``."""
        for cap in (max_line_bytes, max_tool_arguments):
            if cap is not None and cap < 1:
                raise ConfigurationError("size caps must be positive (or None)")
        self._limits = StreamLimits(max_line_bytes, max_tool_arguments)
        self.io: IOMode = io_mode(io, http_client, io_scheduler)
        """``"thread"`` or ``"loop"``: how this model reads its streams."""
        self._io = io_scheduler or IO_SCHEDULER
        # The user's client, else many small pools of our own, made on first use.
        self._clients = ModelClients(http_client, verify)

    def __repr__(self) -> str:
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def needs_api_key(self) -> bool:
        """No key is set and the host is not loopback: every request would fail with
        :class:`~rxreact.errors.ConfigurationError`. A command line checks this before it starts."""
        return self._api_key is None and not self._keyless_ok

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

        def attempt(call: ThreadCall[ChatChunk], content: bytes) -> None:
            with self._exchange(call, content, stream=True) as response:
                self._check_stream(response)
                read_sse(response, call, self._think_tags, self._limits)

        async def aattempt(call: LoopCall[ChatChunk], content: bytes) -> None:
            async with self._aexchange(call, content, stream=True) as response:
                if response.headers.get("content-type", "").startswith(NOT_A_STREAM_TYPES):
                    await response.aread()  # the check quotes the body
                self._check_stream(response)
                await aread_sse(response, call, self._think_tags, self._limits)

        return self._observable(request, stream=True, attempt=attempt, aattempt=aattempt)

    def complete(self, request: ChatRequest) -> ModelResponse:
        """Request one whole response (blocking, non-streaming), with the stream's retry policy.

        Think tags are split as in :meth:`stream`, so the result equals the assembled stream.

        Raises:
            ModelError: a subclass, as for :meth:`stream`.
            ConfigurationError: no API key is set.
        """

        if self.io == "loop" and on_io_loop():
            raise RuntimeError("complete() would block the I/O loop it waits for: use stream()")

        def attempt(call: ThreadCall[ModelResponse], content: bytes) -> None:
            with self._exchange(call, content, stream=False) as response:
                call.batch_read()  # the headers are the "first chunk" of a whole response
                call.emit(self._split_think(parse_completion(response.read())))

        async def aattempt(call: LoopCall[ModelResponse], content: bytes) -> None:
            async with self._aexchange(call, content, stream=False) as response:
                call.batch_read()
                call.emit(self._split_think(parse_completion(await response.aread())))

        done = threading.Event()
        outcome: list[Any] = []

        def settle(value: Any) -> None:
            outcome.append(value)
            done.set()

        source = self._observable(request, stream=False, attempt=attempt, aattempt=aattempt)
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
        self._clients.close()

    # -- internals --------------------------------------------------------------------------

    def _observable(
        self,
        request: ChatRequest,
        *,
        stream: bool,
        attempt: Callable[[ThreadCall[_T], bytes], None],
        aattempt: Callable[[LoopCall[_T], bytes], Coroutine[Any, Any, None]],
    ) -> Observable[_T]:
        def subscribe(
            observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            body: list[bytes] = []  # encoded on the I/O thread, once for all attempts

            def content() -> bytes:
                if not body:
                    body.append(self._encode(request, stream))
                return body[0]

            settings = CallSettings(
                self._timeouts, self._max_retries, self._backoff, timer_scheduler(scheduler)
            )
            call: ModelCall[_T]
            if self.io == "loop":

                async def arun(call: LoopCall[_T]) -> None:
                    await aattempt(call, content())

                call = LoopCall(arun, observer, settings)
            else:

                def run(call: ThreadCall[_T]) -> None:
                    attempt(call, content())

                call = ThreadCall(run, observer, settings, self._io)
            return call.start()

        return Fused(subscribe)

    def _encode(self, request: ChatRequest, stream: bool) -> bytes:
        body = encode_request(
            request,
            model=self.model,
            stream=stream,
            send_reasoning=self._send_reasoning,
            include_usage=self._include_usage,
            default_options=self.options,
        )
        try:
            return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        except (TypeError, ValueError) as exc:  # an option that is not JSON, say
            raise ConfigurationError(f"the request cannot be sent as JSON: {exc}") from exc

    @contextlib.contextmanager
    def _exchange(
        self, call: ThreadCall[Any], content: bytes, *, stream: bool
    ) -> Iterator[httpx.Response]:
        """POST the body; yield the 2xx response, abortable by the call; map every failure."""
        request = self._request(call, content, stream)
        request["extensions"]["trace"] = call.trace
        client, shards, shard = self._clients.sync()
        call.locate = functools.partial(pooled_socket, client, self._url, call.httpx_timeout)
        response: httpx.Response | None = None
        try:
            with client.stream(**request) as response, call.attached(response):
                if response.status_code >= 400:
                    raise status_error(response, self._redact)
                yield response
        except httpx.HTTPError as exc:
            raise transport_error(
                exc, self._origin, self._timeouts, call.phase, self._redact
            ) from exc
        finally:
            if response is not None:
                _forget_stream(response)
            if shards is not None and shard is not None:
                shards.release(shard)

    @contextlib.asynccontextmanager
    async def _aexchange(
        self, call: LoopCall[Any], content: bytes, *, stream: bool
    ) -> AsyncIterator[httpx.Response]:
        """:meth:`_exchange` on the I/O loop (a cancelled task is what aborts it)."""
        request = self._request(call, content, stream)
        client, shards, shard = self._clients.asynchronous()
        response: httpx.Response | None = None
        try:
            async with client.stream(**request) as response:
                call.headers_in()
                if response.status_code >= 400:
                    await response.aread()
                    raise status_error(response, self._redact)
                yield response
        except httpx.HTTPError as exc:
            raise transport_error(
                exc, self._origin, self._timeouts, call.phase, self._redact
            ) from exc
        finally:
            if response is not None:
                _forget_stream(response)
            # Also (above all) after a cancellation: httpcore may have lost a pool slot.
            reclaim(client, self._url, call.httpx_timeout)
            if shards is not None and shard is not None:
                shards.release(shard)

    def _request(self, call: ModelCall[Any], content: bytes, stream: bool) -> dict[str, Any]:
        """The arguments of ``client.stream`` for one attempt."""
        headers = self._headers_for(stream)
        log.debug("POST %s (stream=%s)", self._url, stream)
        return {
            "method": "POST",
            "url": self._url,
            "content": content,
            "headers": headers,
            "extensions": {"timeout": call.httpx_timeout},
        }

    def _check_stream(self, response: httpx.Response) -> None:
        error = not_a_stream(response, self._redact)
        if error is not None:
            raise error

    def _headers_for(self, stream: bool) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
        }
        if self._api_key is not None:
            headers["Authorization"] = f"Bearer {self._api_key.reveal()}"
        elif not self._keyless_ok:
            raise ConfigurationError(
                f"no API key for {self.base_url}: pass api_key=... or set OPENAI_API_KEY"
            )
        headers.update(self._headers)
        return headers

    def _redact(self, text: str) -> str:
        if self._api_key is not None:
            text = text.replace(self._api_key.reveal(), "***")
        return text

    def _split_think(self, response: ModelResponse) -> ModelResponse:
        if not self._think_tags or not response.content:
            return response
        reasoning, content = split_think(response.content)
        if reasoning is None:
            return response
        if response.reasoning:
            reasoning = response.reasoning + reasoning
        return response.model_copy(update={"content": content, "reasoning": reasoning})


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_CLOSED_STREAM = httpx.ByteStream(b"")


def _forget_stream(response: httpx.Response) -> None:
    """Break httpx's reference cycle response -> stream -> response once the response is closed.

    Left alone, the response with its request, headers and stream wrappers (some forty objects
    per request) waits for the cycle collector, and at thousands of concurrent runs that is
    heap every collection walks; unlinked, it is freed as soon as the last reference goes.
    """
    response.stream = _CLOSED_STREAM
