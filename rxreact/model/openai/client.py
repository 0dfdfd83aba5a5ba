""":class:`OpenAIChatModel`: any OpenAI-compatible ``/chat/completions`` endpoint.

The chat-completions wire format on the shared transport (:mod:`rxreact.model.http.model`):
the request body (:mod:`~rxreact.model.openai.request_codec`), the stream's events
(:class:`~rxreact.model.openai.wire.ChatCompletionsParser`) and a whole response
(:func:`~rxreact.model.openai.wire.parse_completion`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from reactivex import abc

from rxreact._validate import check_bool
from rxreact.errors import InvalidArgumentError
from rxreact.messages import ChatRequest
from rxreact.model.chunks import ModelResponse
from rxreact.model.http._aio import run_on_io_loop
from rxreact.model.http._io_mode import DEFAULT_IO, IOMode
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.limits import DEFAULT_MAX_LINE_BYTES, DEFAULT_MAX_TOOL_ARGUMENTS
from rxreact.model.http.model import HTTPChatModel
from rxreact.model.http.think import split_think
from rxreact.model.openai._call_extras import replay_tag
from rxreact.model.openai.request_codec import encode_request
from rxreact.model.openai.wire import ChatCompletionsParser, parse_completion
from rxreact.model.retry_policy import Backoff

__all__ = ["DEFAULT_IO", "OpenAIChatModel", "run_on_io_loop"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIChatModel(HTTPChatModel):
    """A :class:`~rxreact.model.base.ChatModel` over an OpenAI-compatible chat-completions API.

    Args:
        model: the model name; default ``$RXREACT_MODEL``. Missing: :class:`ConfigurationError`.
        base_url: the API root (``.../v1``); default ``$OPENAI_BASE_URL``, else OpenAI's.
        api_key: default ``$OPENAI_API_KEY``. Missing: each request fails with
            :class:`ConfigurationError`, except against a loopback host (local servers and
            :class:`~rxreact.testing.MockOpenAIServer` need none; no ``Authorization`` is sent).
        api_key_env: the environment variable ``api_key`` defaults to and a missing-key error
            names; default ``OPENAI_API_KEY`` (an OpenAI-compatible provider's own, such as
            ``GROQ_API_KEY``, keeps an OpenAI key from being sent to another host).
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
            :mod:`rxreact.model.http.limits`); ``None`` lifts it.
        signature_placeholder: the thought signature sent on the first tool call of each
            step of the current turn that has none of its own (calls another model made):
            Gemini 3 refuses such a history without one. ``None`` (the default) sends none;
            the ``gemini-openai:`` preset sends Google's documented
            ``"skip_thought_signature_validator"``. A tool call's own provider extras (its
            thought signature) are always kept and sent back, to this base URL only
            (:mod:`rxreact.model.openai._call_extras`).

    Raises:
        InvalidArgumentError: a setting of the wrong type or value (the message names it).
        ConfigurationError: no model name, a ``base_url`` that is not an http(s) URL, or an
            ``io`` that does not fit the other arguments.

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
    (:mod:`rxreact.model.http._chunked`). Without ``http_client``, a model makes its own
    clients as concurrency needs them, a few connections each
    (:mod:`rxreact.model.http._clients`).

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

    path = "/chat/completions"
    provider = "openai"
    api_key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    default_base_url = DEFAULT_BASE_URL

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
        signature_placeholder: str | None = None,
    ) -> None:
        if signature_placeholder is not None and not isinstance(signature_placeholder, str):
            raise InvalidArgumentError(
                "signature_placeholder must be a str or None, got "
                f"{type(signature_placeholder).__name__}"
            )
        check_bool("send_reasoning", send_reasoning)
        check_bool("think_tags", think_tags)
        check_bool("include_usage", include_usage)
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            api_key_env=api_key_env,
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
        self._send_reasoning = send_reasoning
        self.think_tags = think_tags
        self._include_usage = include_usage
        self._signature_placeholder = signature_placeholder
        self._replay_tag = replay_tag(self.base_url)
        self._parser = ChatCompletionsParser(self._replay_tag)  # stateless: one for every stream

    def _body(self, request: ChatRequest, stream: bool) -> dict[str, Any]:
        return encode_request(
            request,
            model=self.model,
            stream=stream,
            send_reasoning=self._send_reasoning,
            include_usage=self._include_usage,
            default_options=self.options,
            replay_tag=self._replay_tag,
            signature_placeholder=self._signature_placeholder,
        )

    def _stream_parser(self) -> StreamParser:
        return self._parser

    def _parse_response(self, body: bytes) -> ModelResponse:
        return parse_completion(body, self._replay_tag)

    def _finish_response(self, response: ModelResponse) -> ModelResponse:
        if not self.think_tags or not response.content:
            return response
        reasoning, content = split_think(response.content)
        if reasoning is None:
            return response
        if response.reasoning:
            reasoning = response.reasoning + reasoning
        return response.model_copy(update={"content": content, "reasoning": reasoning})
