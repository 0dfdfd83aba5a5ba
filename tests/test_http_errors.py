"""Errors from the wrong kind of server read as what was asked, what came back and a hint."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from rxreact import ModelHTTPError, NotFoundError, OpenAIChatModel, ServerError
from rxreact.messages import ChatRequest, UserMessage
from rxreact.model.retry_policy import Backoff

REQUEST = ChatRequest(messages=(UserMessage(content="hi"),))


class _WebSite(http.server.BaseHTTPRequestHandler):
    """A web server that is not an API: it has no POST, so http.server answers 501 with its
    own HTML page."""

    posts: list[str]

    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        self.posts.append(self.path)
        super().send_error(code, message, explain)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _WebApp(_WebSite):
    """A web application whose router answers an unknown POST with a 404 HTML page."""

    def do_POST(self) -> None:
        self.posts.append(self.path)
        body = b"<!doctype html><html><body><h1>Not Found</h1>" + b"x" * 500 + b"</body></html>"
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def serving(handler: type[_WebSite]) -> Iterator[tuple[str, list[str]]]:
    posts: list[str] = []
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), type("Handler", (handler,), {"posts": posts})
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", posts
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_an_html_404_names_the_request_and_hints_at_base_url() -> None:
    with (
        serving(_WebApp) as (root, posts),
        OpenAIChatModel("m", base_url=f"{root}/v1", max_retries=0) as model,
        pytest.raises(NotFoundError) as caught,
    ):
        model.complete(REQUEST)
    message = str(caught.value)
    expected = f"POST {root}/v1/chat/completions → 404 text/html: is base_url right?"
    assert message.startswith(expected)
    assert "<html" not in message
    assert len(message) < 200
    assert "<h1>Not Found</h1>" in caught.value.body  # kept for diagnostics
    assert posts == ["/v1/chat/completions"]


@pytest.mark.integration
@pytest.mark.usefixtures("io_mode")
def test_a_501_is_not_retried() -> None:
    fast = Backoff(base=0.001, cap=0.01)
    with (
        serving(_WebSite) as (root, posts),
        OpenAIChatModel("m", base_url=f"{root}/api", max_retries=3, backoff=fast) as model,
        pytest.raises(ServerError) as caught,
    ):
        model.complete(REQUEST)
    assert caught.value.status_code == 501
    assert not caught.value.retryable
    assert str(caught.value).startswith(f"POST {root}/api/chat/completions → 501 text/html: ")
    assert posts == ["/api/chat/completions"]  # once: 501 is not retried


def test_a_json_error_keeps_the_providers_message() -> None:
    error = ModelHTTPError(404, "The model `x` does not exist")
    assert str(error) == "HTTP 404: The model `x` does not exist"
