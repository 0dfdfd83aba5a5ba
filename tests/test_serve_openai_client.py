"""/v1/chat/completions as the ``openai`` SDK sees it (real uvicorn, the SDK's own retries and
timeouts): a client that leaves a non-streamed request cancels its run at once, a failed run
is not retried (``x-should-retry: false``), and every request error (the guard's included)
is OpenAI's error object, whose message the SDK shows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from serve_helpers import serving

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent
from rxreact.messages import content_text
from rxreact.model.scripted.replies import Hang, HTTPErrorReply, Reply, text_reply
from rxreact.serve import create_app
from rxreact.serve.auth import TokenAuthenticator
from rxreact.testing import MockOpenAIServer

openai = pytest.importorskip("openai")

TOKEN = "alice-token-0123456789"


def reply(request: Any) -> Reply:
    """The model: ``hang`` starts an answer and goes silent, ``fail`` is a provider's 400."""
    question = content_text(request.messages[-1].content)
    if question == "hang":
        return [*text_reply("Thinking it over", pieces=3)[:3], Hang()]
    if question == "fail":
        return HTTPErrorReply(400, "context_length_exceeded")
    return text_reply("Fine.")


class Server:
    def __init__(self, url: str, mock: MockOpenAIServer) -> None:
        self.url, self.mock = url, mock

    def client(self, **options: Any) -> Any:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=TOKEN, **options)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    mock = MockOpenAIServer(reply).start()
    model = OpenAIChatModel("mock", base_url=mock.base_url, api_key="sk-test", max_retries=0)
    agent = ReactAgent(model, [], memory=InMemoryChatMemory())
    app = create_app(
        agent,
        authenticate=TokenAuthenticator({TOKEN: "alice"}),
        max_body_bytes=4000,
        max_message_chars=100,
        max_runs_per_user=1,
    )
    try:
        with serving(app) as url:
            yield Server(url, mock)
    finally:
        mock.stop()
        model.close()


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_a_client_that_leaves_a_non_streamed_request_cancels_its_run(server: Server) -> None:
    disconnects = server.mock.disconnects
    with pytest.raises(openai.APITimeoutError):
        server.client(timeout=0.5, max_retries=0).chat.completions.create(
            model="rxreact", messages=ask("hang")
        )
    # the run is cancelled, so its model request is abandoned (before: it hung on forever)
    assert server.mock.wait_for_disconnects(disconnects + 1, timeout=2.0)
    # and its conversation is free again: the next request runs (the per-user limit is 1)
    reply = server.client(max_retries=0).chat.completions.create(
        model="rxreact", messages=ask("hi")
    )
    assert reply.choices[0].message.content == "Fine."


def test_a_failed_run_is_not_retried_by_the_sdk(server: Server) -> None:
    before = len(server.mock.requests)
    with pytest.raises(openai.APIStatusError) as failed:
        server.client(max_retries=2).chat.completions.create(model="rxreact", messages=ask("fail"))
    assert failed.value.status_code == 502
    assert failed.value.response.headers["x-should-retry"] == "false"
    assert "context_length_exceeded" in failed.value.message  # the provider's own word stays
    assert len(server.mock.requests) == before + 1  # one run, not three


@pytest.mark.parametrize(
    ("send", "status", "code"),
    [
        (lambda c: c.with_options(api_key="wrong-token-0123456789"), 401, "unauthorized"),
        (lambda c: c.with_options(max_retries=0), 413, "body_too_large"),
        (lambda c: c.with_options(max_retries=0), 413, "message_too_long"),
        (lambda c: c.with_options(max_retries=0), 422, "invalid_body"),
    ],
)
def test_request_errors_are_openai_error_objects(
    server: Server, send: Any, status: int, code: str
) -> None:
    messages = {
        "body_too_large": ask("x" * 5000),
        "message_too_long": ask("x" * 101),
        "invalid_body": [{"role": "assistant", "content": "not a question"}],
    }.get(code, ask("hi"))
    client = send(server.client(max_retries=0))
    with pytest.raises(openai.APIStatusError) as refused:
        client.chat.completions.create(model="rxreact", messages=messages)
    error = refused.value
    assert error.status_code == status and error.code == code
    assert isinstance(error.body, dict) and set(error.body) == {"message", "type", "param", "code"}
    assert error.body["message"] and error.body["message"] in error.message


def test_malformed_json_and_too_many_runs_are_openai_error_objects(server: Server) -> None:
    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    malformed = httpx.post(f"{server.url}/v1/chat/completions", content=b"{", headers=headers)
    assert malformed.status_code == 400
    assert malformed.json()["error"]["code"] == "malformed_json"
    assert malformed.json()["error"]["type"] == "invalid_request_error"
    body = {"model": "rxreact", "messages": ask("hang"), "stream": True}
    with httpx.stream(
        "POST", f"{server.url}/v1/chat/completions", json=body, headers=headers, timeout=10
    ) as held:
        lines = held.iter_lines()  # kept: a dropped iterator closes the connection
        next(lines)  # the run is going: this user's one run in flight
        busy = httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=headers)
        assert busy.status_code == 429 and busy.headers["retry-after"]
        assert busy.json()["error"]["code"] == "too_many_runs"
        assert busy.json()["error"]["type"] == "rate_limit_error"
        assert "x-should-retry" not in busy.headers  # nothing ran: safe to retry
