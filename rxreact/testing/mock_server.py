"""A loopback OpenAI-compatible chat-completions server that plays a script: real HTTP, real SSE.

Use it to test code that talks to a model over the network, without a network or a key::

    from rxreact.model.openai import OpenAIChatModel
    from rxreact.model.script import HTTPErrorReply, text_reply
    from rxreact.testing import MockOpenAIServer

    def test_answer() -> None:
        script = [HTTPErrorReply(429, headers={"Retry-After": "0"}), text_reply("Hi there.")]
        with MockOpenAIServer(script) as server:
            with OpenAIChatModel("mock", base_url=server.base_url, api_key="sk-test") as model:
                chunks = model.stream(request).pipe(ops.to_list()).run()
            assert len(server.requests) == 2          # the 429 was retried

The script is the vocabulary of :mod:`rxreact.model.script`: each request consumes the next
reply (or a function computes it from the decoded :class:`~rxreact.messages.ChatRequest`).
A streamed reply is sent as one SSE event per :class:`~rxreact.model.chunks.ChatChunk`, then
``data: [DONE]``; :class:`Pause` sleeps on the server thread, :class:`Fail` sends an
in-stream ``{"error": ...}`` event, :class:`Hang` goes silent until the client disconnects,
:class:`Disconnect` drops the connection, :class:`HTTPErrorReply` answers with that status,
:class:`RawSSE` sends recorded bytes verbatim. A non-streaming request gets the assembled reply
as one ``chat.completion``. Usage is sent as scripted, whatever ``stream_options`` says.

Like the real API, requests whose history leaves a tool call unanswered, answers a call that
does not exist, or sets ``tool_choice`` without ``tools`` get HTTP 400
(``validate_history=False`` turns that off).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, cast

from rxreact.errors import ProviderStreamError, RxReactError
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk, ModelResponse
from rxreact.model.request_codec import decode_request
from rxreact.model.script import (
    Disconnect,
    Fail,
    Hang,
    HTTPErrorReply,
    Pause,
    RawSSE,
    Reply,
    Script,
)
from rxreact.model.sse import SSEDecoder
from rxreact.model.wire import DONE, parse_chunk

__all__ = ["MockOpenAIServer", "chunk_to_wire", "response_to_wire"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


class MockOpenAIServer:
    """A scripted ``POST /v1/chat/completions`` on a free loopback port, in a background thread.

    Args:
        script: the replies in request order, or a function from each request to its reply.
        host: the interface to listen on (keep it loopback).
        port: the port; ``0`` picks a free one.
        validate_history: answer HTTP 400 to requests the real API rejects (see the module doc).

    Attributes:
        requests: every request body received, in order, as parsed JSON.
        request_headers: the headers of those requests (names lower-cased), in the same order.
    """

    def __init__(
        self,
        script: Script,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        validate_history: bool = True,
    ) -> None:
        self.requests: list[dict[str, Any]] = []
        self.request_headers: list[dict[str, str]] = []
        self._script = script
        self._validate = validate_history
        self._address = (host, port)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a request or a disconnect was seen
        self._disconnects = 0
        self._served = 0
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        # Every wait on the server side also watches this socket: one byte on stop wakes them all.
        self._wake_r, self._wake_w = socket.socketpair()

    @property
    def base_url(self) -> str:
        """``http://host:port/v1``: pass it as ``OpenAIChatModel(base_url=...)``."""
        if self._httpd is None:
            raise RuntimeError("the server is not started: use `with MockOpenAIServer(...)`")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def disconnects(self) -> int:
        """How many responses the client abandoned before the server finished them."""
        with self._lock:
            return self._disconnects

    def wait_for_disconnects(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Block until at least ``count`` abandoned responses were seen; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self._disconnects >= count, timeout)

    def wait_for_requests(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Block until at least ``count`` requests were received; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self.requests) >= count, timeout)

    def start(self) -> Self:
        """Listen and serve in a background thread (``with`` does this for you)."""
        self._httpd = _HTTPServer(self._address, _Handler, self)
        self._thread = threading.Thread(target=self._serve, name="mock-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake hanging replies, close every connection and wait for the handlers."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._wake_w.send(b"x")
        if self._thread is not None:
            self._thread.join()
        httpd.close_connections()
        httpd.server_close()  # joins the handler threads (block_on_close)
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _serve(self) -> None:
        httpd = self._httpd
        assert httpd is not None
        while True:
            ready, _, _ = select.select([httpd.socket, self._wake_r], [], [])
            if self._wake_r in ready:
                return
            httpd.handle_request()  # accepts one connection and starts its handler thread

    # -- called by the handler threads ------------------------------------------------------

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        if callable(self._script):
            return self._script(decode_request(body))
        with self._lock:
            n = self._served
            self._served += 1
        if n >= len(self._script):
            raise LookupError(f"MockOpenAIServer: the script has no reply for request #{n + 1}")
        return self._script[n]

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        with self._changed:
            self.requests.append(body)
            self.request_headers.append(headers)
            self._changed.notify_all()

    def _client_gone(self) -> None:
        with self._changed:
            self._disconnects += 1
            self._changed.notify_all()

    def _wait(self, conn: socket.socket, seconds: float | None) -> bool:
        """Sleep ``seconds`` (``None``: until stopped) unless the client leaves; True if it left.

        A client that is waiting for our response sends nothing, so a readable socket means
        it closed (or reset) the connection.
        """
        deadline = None if seconds is None else time.monotonic() + seconds
        while True:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([conn, self._wake_r], [], [], timeout)
            if not ready or self._wake_r in ready:
                return False
            try:
                gone = conn.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                gone = True
            if gone:
                self._client_gone()
                return True
            return False  # unexpected bytes (pipelining): stop waiting rather than spin

    def _validate_body(self, body: dict[str, Any]) -> str | None:
        return _history_error(body) if self._validate else None


class _HTTPServer(ThreadingHTTPServer):
    # Handler threads are joined on stop, and stop wakes every wait, so none can hang it.
    daemon_threads = False
    block_on_close = True
    timeout = 0  # handle_request() is called only when a connection is waiting

    def __init__(
        self, address: tuple[str, int], handler: type[_Handler], owner: MockOpenAIServer
    ) -> None:
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        super().__init__(address, handler)

    def track(self, conn: socket.socket, active: bool) -> None:
        with self._conn_lock:
            (self._connections.add if active else self._connections.discard)(conn)

    def close_connections(self) -> None:
        """Wake handlers idling on keep-alive connections: their next read sees EOF."""
        with self._conn_lock:
            for conn in self._connections:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that went away mid-response is not a server failure


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        self.server.track(self.connection, False)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        owner = self.server.owner
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return self._error(404, f"Unknown path {self.path}")
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as exc:
            return self._error(400, f"Invalid JSON body: {exc}")
        owner._record(body, {k.lower(): v for k, v in self.headers.items()})
        problem = owner._validate_body(body)
        if problem is not None:
            return self._error(400, problem)
        try:
            reply = owner._next_reply(body)
        except Exception as exc:  # a script bug: tell the client instead of dropping it
            return self._error(500, f"{type(exc).__name__}: {exc}")
        model = str(body.get("model") or "mock-model")
        if isinstance(reply, HTTPErrorReply):
            return self._error(reply.status, reply.message, reply.headers)
        if body.get("stream"):
            self._stream(reply, model)
        else:
            self._complete(reply, model)

    def _stream(self, reply: Reply, model: str) -> None:
        owner = self.server.owner
        if not self._start_stream():
            return
        if isinstance(reply, RawSSE):
            self._send([reply.data], end=True)
            return
        completion_id, created = f"chatcmpl-mock-{len(owner.requests)}", int(time.time())
        pending: list[bytes] = []
        for item in cast(Sequence[Any], reply):
            if isinstance(item, ChatChunk):
                wire = chunk_to_wire(item, id=completion_id, model=model, created=created)
                pending.append(_event(wire))
            elif isinstance(item, Pause):
                if not self._send(pending) or owner._wait(self.connection, item.seconds):
                    return self._drop()
                pending = []
            elif isinstance(item, Fail):
                pending.append(_event({"error": _error_object(item.error)}))
                self._send(pending, end=True)
                self.close_connection = True
                return
            elif isinstance(item, Hang):
                if self._send(pending):
                    owner._wait(self.connection, None)
                return self._drop()
            elif isinstance(item, Disconnect):
                self._send(pending)
                return self._drop()
        pending.append(b"data: " + DONE.encode() + b"\n\n")
        self._send(pending, end=True)

    def _complete(self, reply: Reply, model: str) -> None:
        owner = self.server.owner
        if isinstance(reply, RawSSE):
            try:
                response = _assemble_sse(reply.data)
            except RxReactError as exc:
                return self._error(_status_of(exc), _error_object(exc)["message"])
        else:
            chunks: list[ChatChunk] = []
            for item in cast(Sequence[Any], reply):
                if isinstance(item, ChatChunk):
                    chunks.append(item)
                elif isinstance(item, Pause) and owner._wait(self.connection, item.seconds):
                    return self._drop()
                elif isinstance(item, Fail):
                    return self._error(_status_of(item.error), _error_object(item.error)["message"])
                elif isinstance(item, Hang):
                    owner._wait(self.connection, None)
                    return self._drop()
                elif isinstance(item, Disconnect):
                    return self._drop()
            response = assemble(chunks)
        wire = response_to_wire(
            response,
            id=f"chatcmpl-mock-{len(owner.requests)}",
            model=model,
            created=int(time.time()),
        )
        self._json(200, wire)

    # -- writing ----------------------------------------------------------------------------

    def _start_stream(self) -> bool:
        """Send the headers of a 200 SSE response right away, as providers do."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        try:
            self.end_headers()
        except OSError:
            self.server.owner._client_gone()
            self.close_connection = True
            return False
        return True

    def _send(self, events: list[bytes], *, end: bool = False) -> bool:
        """Write events as HTTP chunks (one each, like real providers) in one syscall."""
        parts = [b"%x\r\n%s\r\n" % (len(e), e) for e in events]
        if end:
            parts.append(b"0\r\n\r\n")
        if not parts:
            return True
        try:
            self.wfile.write(b"".join(parts))
        except OSError:
            self.server.owner._client_gone()
            self.close_connection = True
            return False
        return True

    def _drop(self) -> None:
        """Close the connection without finishing the response (no terminating HTTP chunk)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        try:
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "api_error")
        code = "rate_limit_exceeded" if status == 429 else None
        self._json(status, {"error": {"message": message, "type": kind, "code": code}}, headers)


def chunk_to_wire(chunk: ChatChunk, *, id: str, model: str, created: int) -> dict[str, Any]:
    """One ``chat.completion.chunk`` object as OpenAI streams it.

    A chunk with nothing but usage gets ``"choices": []`` (OpenAI's trailing usage chunk);
    reasoning is sent as ``reasoning_content``; a tool-call delta with an id gets
    ``"type": "function"``.
    """
    wire: dict[str, Any] = {
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
    }
    delta: dict[str, Any] = {}
    if chunk.role is not None:
        delta["role"] = chunk.role
    if chunk.text is not None:
        delta["content"] = chunk.text
    if chunk.reasoning is not None:
        delta["reasoning_content"] = chunk.reasoning
    if chunk.tool_calls:
        delta["tool_calls"] = [_tool_call_delta(d) for d in chunk.tool_calls]
    usage_only = chunk.usage is not None and not delta and chunk.finish_reason is None
    wire["choices"] = (
        []
        if usage_only
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": chunk.finish_reason}]
    )
    if chunk.usage is not None:
        wire["usage"] = chunk.usage.model_dump(exclude_none=True)
    return wire


def response_to_wire(
    response: ModelResponse, *, id: str, model: str, created: int
) -> dict[str, Any]:
    """One non-streaming ``chat.completion`` object carrying ``response``."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.reasoning is not None:
        message["reasoning_content"] = response.reasoning
    if response.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in response.tool_calls
        ]
    wire: dict[str, Any] = {
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": response.finish_reason}],
    }
    if response.usage is not None:
        wire["usage"] = response.usage.model_dump(exclude_none=True)
    return wire


def _tool_call_delta(delta: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if delta.index is not None:
        out["index"] = delta.index
    if delta.id is not None:
        out["id"] = delta.id
        out["type"] = "function"
    function: dict[str, Any] = {}
    if delta.name is not None:
        function["name"] = delta.name
    if delta.arguments is not None:
        function["arguments"] = delta.arguments
    out["function"] = function
    return out


def _event(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def _error_object(error: Exception) -> dict[str, Any]:
    if isinstance(error, ProviderStreamError):
        return {"message": error.provider_message, "type": error.error_type, "code": error.code}
    message = getattr(error, "provider_message", None) or str(error) or type(error).__name__
    return {"message": message, "type": "server_error", "code": None}


def _status_of(error: Exception) -> int:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) and status >= 400 else 500


def _assemble_sse(data: bytes) -> ModelResponse:
    decoder = SSEDecoder()
    chunks: list[ChatChunk] = []
    for event in decoder.feed(data) + decoder.close():
        if event.data == DONE:
            break
        chunk = parse_chunk(event.data, event.event)
        if chunk is not None:
            chunks.append(chunk)
    return assemble(chunks)


def _history_error(body: dict[str, Any]) -> str | None:
    """The 400 message the real API gives for this body's tools and history, if any."""
    if body.get("tool_choice") is not None and not body.get("tools"):
        return (
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified."
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "Invalid 'messages': expected a non-empty array of messages."
    pending: list[str] = []  # ids of the last assistant tool calls not answered yet
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return (
                    f"Invalid parameter: messages[{i}] with role 'tool' must be a response to a "
                    f"preceding message with 'tool_calls' (no open call has id {call_id!r})."
                )
            pending.remove(call_id)
            continue
        if pending:
            return _unanswered(pending)
        if role == "assistant":
            pending = [str(c.get("id")) for c in message.get("tool_calls") or ()]
    return _unanswered(pending) if pending else None


def _unanswered(ids: list[str]) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
        + ", ".join(ids)
    )
