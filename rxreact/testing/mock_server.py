"""A loopback OpenAI-compatible chat-completions server that plays a script: real HTTP, real SSE.

Use it to test code that talks to a model over the network, without a network or a key::

    import reactivex.operators as ops

    from rxreact.messages import ChatRequest, UserMessage
    from rxreact.model.openai.client import OpenAIChatModel
    from rxreact.model.scripted.replies import HTTPErrorReply, text_reply
    from rxreact.testing import MockOpenAIServer

    def test_answer_after_a_rate_limit() -> None:
        request = ChatRequest(messages=(UserMessage(content="Hi"),))
        script = [HTTPErrorReply(429, "slow down", {"retry-after-ms": "10"}), text_reply("Hello!")]
        with (
            MockOpenAIServer(script) as server,
            OpenAIChatModel("mock", base_url=server.base_url) as model,  # loopback: no key needed
        ):
            chunks = model.stream(request).pipe(ops.to_list()).run()
        assert "".join(c.text or "" for c in chunks) == "Hello!"
        assert len(server.requests) == 2  # the 429 was retried
        assert server.requests[0]["messages"] == [{"role": "user", "content": "Hi"}]

The script is the vocabulary of :mod:`rxreact.model.scripted.replies`: each request consumes
the next reply (or a function computes it from the decoded :class:`~rxreact.messages.ChatRequest`).
A streamed reply is sent as one SSE event per :class:`~rxreact.model.chunks.ChatChunk`, then
``data: [DONE]``; :class:`Pause` sleeps on the server thread, :class:`Fail` sends an
in-stream ``{"error": ...}`` event, :class:`Hang` goes silent until the client disconnects,
:class:`Disconnect` drops the connection, :class:`HTTPErrorReply` answers with that status,
:class:`RawSSE` sends recorded bytes verbatim. A non-streaming request gets the assembled reply
as one ``chat.completion``. Usage is sent as scripted, whatever ``stream_options`` says.

The same server speaks Anthropic's Messages API at ``/v1/messages``, with :attr:`origin` as
its base URL (``AnthropicModel(base_url=server.origin)``: the path carries the version). The
script's chunks become content blocks, reasoning a thinking block with a signature the server
checks when it comes back, and Anthropic's request rules answer HTTP 400 with its error body
(:mod:`rxreact.testing._anthropic`).

Like the real API, requests whose history leaves a tool call unanswered, answers a call that
does not exist, or sets ``tool_choice`` without ``tools`` get HTTP 400, and so do content
parts it refuses: an image or a file outside a user message, an unknown part type, an image
URL that is neither ``http(s)://`` nor a base64 PNG/JPEG/GIF/WebP ``data:`` URL, a file
without base64 ``file_data`` (or a ``file_id``) and a ``filename`` (``validate_history=False``
turns all that off).
"""

from __future__ import annotations

import select
import socket
import threading
import time
from types import TracebackType
from typing import Any, Self

from rxreact.model.scripted.replies import Reply, Script
from rxreact.testing._dialect import Dialect
from rxreact.testing._handler import HTTPServer
from rxreact.testing._wire import chunk_to_wire, response_to_wire

__all__ = ["MockOpenAIServer", "chunk_to_wire", "response_to_wire"]


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
        request_paths: the paths those requests were sent to (which API each spoke), in order.
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
        self.request_paths: list[str] = []
        self._script = script
        self._validate = validate_history
        self._address = (host, port)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a request or a disconnect was seen
        self._disconnects = 0
        self._connections = 0  # kept from the stopped server
        self._served = 0
        self._httpd: HTTPServer | None = None
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
    def origin(self) -> str:
        """``http://host:port``: the base URL of an API whose paths carry their version, as
        ``AnthropicModel(base_url=...)`` (``$ANTHROPIC_BASE_URL``) for ``/v1/messages``."""
        return self.base_url.removesuffix("/v1")

    @property
    def disconnects(self) -> int:
        """How many responses the client abandoned before the server finished them."""
        with self._lock:
            return self._disconnects

    @property
    def connections(self) -> int:
        """How many connections the server accepted (requests on a reused one count once)."""
        httpd = self._httpd
        return self._connections if httpd is None else httpd.opened

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
        self._httpd = HTTPServer(self._address, self)
        self._thread = threading.Thread(target=self._serve, name="mock-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake hanging replies, close every connection and wait for the handlers."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._connections = httpd.opened
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

    def _next_reply(self, body: dict[str, Any], dialect: Dialect) -> Reply:
        if callable(self._script):
            return self._script(dialect.decode(body))
        with self._lock:
            n = self._served
            self._served += 1
        if n >= len(self._script):
            raise LookupError(f"MockOpenAIServer: the script has no reply for request #{n + 1}")
        return self._script[n]

    def _record(self, body: dict[str, Any], headers: dict[str, str], path: str = "") -> None:
        with self._changed:
            self.requests.append(body)
            self.request_headers.append(headers)
            self.request_paths.append(path)
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

    def _validate_body(self, body: dict[str, Any], dialect: Dialect) -> str | None:
        return dialect.problem(body) if self._validate else None
