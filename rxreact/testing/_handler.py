"""The HTTP side of :class:`~rxreact.testing.MockOpenAIServer`: one thread per connection,
HTTP/1.1 keep-alive, SSE over chunked transfer encoding (one HTTP chunk per event, as providers
send them, and one write per run of events between pauses)."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol, cast

from rxreact.errors import RxReactError
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk
from rxreact.model.scripted.replies import (
    Disconnect,
    Fail,
    Hang,
    HTTPErrorReply,
    Pause,
    RawSSE,
    Reply,
)
from rxreact.testing._dialect import Dialect, dialect_for
from rxreact.testing._wire import CHAT_COMPLETIONS, error_object, status_of

__all__ = ["HTTPServer"]


class _Owner(Protocol):
    """What the handlers need from the MockOpenAIServer that owns them."""

    requests: list[dict[str, Any]]

    def _next_reply(self, body: dict[str, Any], dialect: Dialect) -> Reply: ...
    def _record(self, body: dict[str, Any], headers: dict[str, str], path: str = "") -> None: ...
    def _client_gone(self) -> None: ...
    def _wait(self, conn: socket.socket, seconds: float | None) -> bool: ...
    def _validate_body(self, body: dict[str, Any], dialect: Dialect) -> str | None: ...


class HTTPServer(ThreadingHTTPServer):
    # Handler threads are joined on stop, and stop wakes every wait, so none can hang it.
    daemon_threads = False
    block_on_close = True
    timeout = 0  # handle_request() is called only when a connection is waiting

    def __init__(self, address: tuple[str, int], owner: _Owner) -> None:
        self.owner = owner
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        self.opened = 0
        """Connections accepted so far (a client that reuses its connections opens few)."""
        super().__init__(address, _Handler)

    def track(self, conn: socket.socket, active: bool) -> None:
        with self._conn_lock:
            (self._connections.add if active else self._connections.discard)(conn)
            self.opened += active

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
    server: HTTPServer
    dialect: Dialect = CHAT_COMPLETIONS
    """The wire format of the request being answered (chosen by its path)."""

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
        dialect = dialect_for(self.path)
        if dialect is None:
            self.dialect = CHAT_COMPLETIONS
            return self._error(404, f"Unknown path {self.path}")
        self.dialect = dialect
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as exc:
            return self._error(400, f"Invalid JSON body: {exc}")
        headers = {k.lower(): v for k, v in self.headers.items()}
        owner._record(body, headers, self.path)
        refuse = getattr(dialect, "refuse", None)  # a dialect that checks signatures (Bedrock)
        refusal = None if refuse is None else refuse(self.path, headers, raw, self._host())
        if refusal is not None:
            return self._error(*refusal)
        problem = owner._validate_body(body, dialect)
        if problem is not None:
            return self._error(400, problem)
        try:
            reply = owner._next_reply(body, dialect)
        except Exception as exc:  # a script bug: tell the client instead of dropping it
            return self._error(500, f"{type(exc).__name__}: {exc}")
        stream, model = dialect.kind(body, self.path)
        if isinstance(reply, HTTPErrorReply):
            return self._error(reply.status, reply.message, reply.headers)
        if stream:
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
        writer = self.dialect.writer(model, len(owner.requests))
        pending: list[bytes] = writer.start()
        for item in cast(Sequence[Any], reply):
            if isinstance(item, ChatChunk):
                pending += writer.chunk(item)
            elif isinstance(item, Pause):
                if not self._send(pending) or owner._wait(self.connection, item.seconds):
                    return self._drop()
                pending = []
            elif isinstance(item, Fail):
                pending += writer.fail(item.error)
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
        pending += writer.end()
        self._send(pending, end=True)

    def _complete(self, reply: Reply, model: str) -> None:
        owner = self.server.owner
        if isinstance(reply, RawSSE):
            try:
                response = self.dialect.assemble(reply.data)
            except RxReactError as exc:
                return self._error(status_of(exc), error_object(exc)["message"])
        else:
            chunks: list[ChatChunk] = []
            for item in cast(Sequence[Any], reply):
                if isinstance(item, ChatChunk):
                    chunks.append(item)
                elif isinstance(item, Pause) and owner._wait(self.connection, item.seconds):
                    return self._drop()
                elif isinstance(item, Fail):
                    return self._error(status_of(item.error), error_object(item.error)["message"])
                elif isinstance(item, Hang):
                    owner._wait(self.connection, None)
                    return self._drop()
                elif isinstance(item, Disconnect):
                    return self._drop()
            response = assemble(chunks)
        self._json(200, self.dialect.response(response, model, len(owner.requests)))

    # -- writing ----------------------------------------------------------------------------

    def _start_stream(self) -> bool:
        """Send the headers of a 200 SSE response right away, as providers do."""
        self.send_response(200)
        content_type = getattr(self.dialect, "content_type", "text/event-stream; charset=utf-8")
        self.send_header("Content-Type", content_type)
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

    def _host(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host!s}:{port}"

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
        self._json(status, self.dialect.error_body(status, message), headers)
