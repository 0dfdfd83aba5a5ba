"""MockOpenAIServer, checked with a plain httpx client: the bytes on the wire, not our model."""

from __future__ import annotations

import json
import socket
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rxreact.errors import ProviderStreamError
from rxreact.messages import ChatRequest, Usage
from rxreact.model.assembly import assemble
from rxreact.model.chunks import ChatChunk, ToolCallDelta
from rxreact.model.http.sse import SSEDecoder
from rxreact.model.openai.wire import DONE, parse_chunk, parse_completion
from rxreact.model.scripted.replies import (
    Disconnect,
    Fail,
    Hang,
    HTTPErrorReply,
    Pause,
    RawSSE,
    Reply,
    text_reply,
    tool_call_reply,
)
from rxreact.testing import MockOpenAIServer
from rxreact.testing.mock_server import chunk_to_wire

pytestmark = pytest.mark.integration

USER = {"role": "user", "content": "hi"}
CALL = {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as c:
        yield c


def post(
    client: httpx.Client, server: MockOpenAIServer, stream: bool = True, **body: Any
) -> httpx.Response:
    payload = {"model": "m", "messages": [USER], "stream": stream, **body}
    return client.post(f"{server.base_url}/chat/completions", json=payload)


def events(response: httpx.Response) -> list[str]:
    decoder = SSEDecoder()
    return [e.data for e in decoder.feed(response.content) + decoder.close()]


def chunks_of(data: list[str]) -> list[ChatChunk]:
    return [c for d in data if d != DONE for c in [parse_chunk(d)] if c is not None]


def test_streams_one_event_per_chunk_then_done(client: httpx.Client) -> None:
    reply = text_reply("Hello world", reasoning="Think", usage=Usage(prompt_tokens=3))
    with MockOpenAIServer([reply]) as server:
        response = post(client, server)

    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["transfer-encoding"] == "chunked"
    data = events(response)
    assert data[-1] == DONE
    assert chunks_of(data) == reply


def test_tool_call_reply_round_trips(client: httpx.Client) -> None:
    reply = tool_call_reply(("get_weather", {"city": "Paris"}), ("f", "{bad"), text="Let me see.")
    with MockOpenAIServer([reply]) as server:
        response = post(client, server)

    assert chunks_of(events(response)) == reply


def test_non_streaming_returns_the_assembled_reply(client: httpx.Client) -> None:
    reply = tool_call_reply(("get_weather", {"city": "Paris"}), usage=Usage(total_tokens=9))
    with MockOpenAIServer([reply]) as server:
        response = post(client, server, stream=False)

    body = response.json()
    assert body["object"] == "chat.completion"
    assert body["choices"][0]["message"]["tool_calls"][0]["type"] == "function"
    assert parse_completion(response.content) == assemble(
        c for c in reply if isinstance(c, ChatChunk)
    )


def test_chunk_to_wire_shapes() -> None:
    usage_only = chunk_to_wire(ChatChunk(usage=Usage(total_tokens=1)), id="x", model="m", created=0)
    call = chunk_to_wire(
        ChatChunk(tool_calls=(ToolCallDelta(0, "c", "f", ""), ToolCallDelta(arguments="{}"))),
        id="x",
        model="m",
        created=0,
    )

    assert usage_only["choices"] == []
    assert usage_only["usage"] == {"total_tokens": 1}
    assert call["choices"][0]["delta"]["tool_calls"] == [
        {"index": 0, "id": "c", "type": "function", "function": {"name": "f", "arguments": ""}},
        {"function": {"arguments": "{}"}},
    ]


def test_records_requests_and_headers(client: httpx.Client) -> None:
    with MockOpenAIServer([text_reply("a"), text_reply("b")]) as server:
        post(client, server, temperature=0)
        client.post(
            f"{server.base_url}/chat/completions",
            json={"model": "m", "messages": [USER]},
            headers={"Authorization": "Bearer sk-x"},
        )

    assert [r.get("temperature") for r in server.requests] == [0, None]
    assert server.request_headers[1]["authorization"] == "Bearer sk-x"


def test_function_script_sees_the_decoded_request(client: httpx.Client) -> None:
    seen: list[ChatRequest] = []

    def script(request: ChatRequest) -> Reply:
        seen.append(request)
        return text_reply(f"{len(request.messages)} message(s)")

    with MockOpenAIServer(script) as server:
        response = post(client, server)

    assert [c.text for c in chunks_of(events(response)) if c.text] == ["1 ", "message(s)"]
    assert seen[0].messages[0].content == "hi"


def test_http_error_reply(client: httpx.Client) -> None:
    reply = HTTPErrorReply(429, "Slow down", {"Retry-After": "7"})
    with MockOpenAIServer([reply]) as server:
        response = post(client, server)

    assert response.status_code == 429
    assert response.headers["retry-after"] == "7"
    assert response.json()["error"] == {
        "message": "Slow down",
        "type": "rate_limit_error",
        "code": "rate_limit_exceeded",
    }


def test_fail_sends_an_error_event_without_done(client: httpx.Client) -> None:
    error = ProviderStreamError("overloaded", code="503", error_type="server_error")
    with MockOpenAIServer([[ChatChunk(text="Hel"), Fail(error)]]) as server:
        response = post(client, server)

    data = events(response)
    assert DONE not in data
    assert json.loads(data[-1]) == {
        "error": {"message": "overloaded", "type": "server_error", "code": "503"}
    }


def test_fail_in_a_non_streaming_request_is_an_http_error(client: httpx.Client) -> None:
    with MockOpenAIServer([[ChatChunk(text="Hel"), Fail(RuntimeError("boom"))]]) as server:
        response = post(client, server, stream=False)

    assert response.status_code == 500
    assert response.json()["error"]["message"] == "boom"


def test_raw_sse_is_sent_verbatim(client: httpx.Client) -> None:
    raw = b': keep-alive\r\n\r\ndata: {"choices": []}\r\n\r\nevent: x\ndata: [DONE]\n\n'
    with MockOpenAIServer([RawSSE(raw), RawSSE(raw)]) as server:
        streamed = post(client, server)
        whole = post(client, server, stream=False)

    assert streamed.content == raw
    assert whole.json()["choices"][0]["message"]["content"] is None


def test_disconnect_cuts_the_body(client: httpx.Client) -> None:
    with (
        MockOpenAIServer([[ChatChunk(text="a"), Disconnect()]]) as server,
        pytest.raises(httpx.RemoteProtocolError),
    ):
        post(client, server)


def test_pause_delays_the_next_chunk(client: httpx.Client) -> None:
    with MockOpenAIServer([[ChatChunk(text="a"), Pause(0.1), ChatChunk(text="b")]]) as server:
        start = time.monotonic()
        response = post(client, server)

    assert time.monotonic() - start >= 0.1
    assert [c.text for c in chunks_of(events(response))] == ["a", "b"]


def test_hang_until_the_client_leaves(client: httpx.Client) -> None:
    with MockOpenAIServer([[ChatChunk(text="a"), Hang()]]) as server:
        with client.stream(
            "POST",
            f"{server.base_url}/chat/completions",
            json={"model": "m", "messages": [USER], "stream": True},
        ) as response:
            first = next(response.iter_raw())
        # Leaving the block closed the half-read response, hence the connection.
        assert server.wait_for_disconnects(1, timeout=2)

    assert b'"content":"a"' in first
    assert server.disconnects == 1


def test_stop_does_not_wait_for_a_hanging_reply() -> None:
    outcome: list[BaseException] = []

    def call(url: str, stream: bool) -> None:
        with httpx.Client(timeout=5) as c:
            try:
                c.post(url, json={"model": "m", "messages": [USER], "stream": stream})
            except httpx.HTTPError as exc:
                outcome.append(exc)

    with MockOpenAIServer([[Hang()], [Hang()]]) as server:
        url = f"{server.base_url}/chat/completions"
        threads = [threading.Thread(target=call, args=(url, s)) for s in (True, False)]
        for t in threads:
            t.start()
        assert server.wait_for_requests(2, timeout=2)
    # Leaving the block stopped the server although both replies were hanging.
    for t in threads:
        t.join(timeout=2)
        assert not t.is_alive()
    assert len(outcome) == 2


@pytest.mark.parametrize(
    ("messages", "extra", "fragment"),
    [
        (
            [USER, {"role": "assistant", "content": None, "tool_calls": [CALL]}, USER],
            {},
            "did not have response messages: call_0",
        ),
        (
            [USER, {"role": "assistant", "content": None, "tool_calls": [CALL]}],
            {},
            "did not have response messages: call_0",
        ),
        (
            [USER, {"role": "tool", "tool_call_id": "call_9", "content": "x"}],
            {},
            "must be a response to a preceding message with 'tool_calls'",
        ),
        ([USER], {"tool_choice": "none"}, "only allowed when 'tools' are specified"),
    ],
)
def test_invalid_histories_get_400(
    client: httpx.Client, messages: list[Any], extra: dict[str, Any], fragment: str
) -> None:
    with MockOpenAIServer([text_reply("never")]) as server:
        response = post(client, server, messages=messages, **extra)

    assert response.status_code == 400
    assert fragment in response.json()["error"]["message"]
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_valid_tool_history_and_opt_out(client: httpx.Client) -> None:
    answered = [
        USER,
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_0", "content": "ok"},
        USER,
    ]
    with MockOpenAIServer([text_reply("a")]) as server:
        assert post(client, server, messages=answered).status_code == 200
    with MockOpenAIServer([text_reply("a")], validate_history=False) as server:
        assert post(client, server, messages=answered[:2]).status_code == 200


def test_exhausted_script_and_unknown_path(client: httpx.Client) -> None:
    with MockOpenAIServer([]) as server:
        exhausted = post(client, server)
        unknown = client.post(f"{server.base_url}/embeddings", json={})

    assert exhausted.status_code == 500
    assert "no reply for request #1" in exhausted.json()["error"]["message"]
    assert unknown.status_code == 404


def test_base_url_needs_a_started_server() -> None:
    server = MockOpenAIServer([])
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url
    server.stop()  # stopping a server that never started is a no-op
    with server:
        host, port = server.base_url.removeprefix("http://").removesuffix("/v1").split(":")
    assert host == "127.0.0.1"
    with (
        pytest.raises(ConnectionRefusedError),
        socket.create_connection((host, int(port)), timeout=1),
    ):
        pass


def test_the_docstring_example_runs() -> None:
    import rxreact.testing.mock_server as module

    doc = module.__doc__ or ""
    example = doc.split("::\n", 1)[1].split("\nThe script is", 1)[0]
    namespace: dict[str, Any] = {}
    exec(textwrap.dedent(example), namespace)
    namespace["test_answer_after_a_rate_limit"]()


PNG_URL = "data:image/png;base64,iVBORw0KGgo="
IMAGE_PART = {"type": "image_url", "image_url": {"url": PNG_URL}}


def test_content_parts_the_real_api_refuses_get_400(client: httpx.Client) -> None:
    calls = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    }
    refused = [
        ([calls, {"role": "tool", "tool_call_id": "c", "content": [IMAGE_PART]}], "role 'tool'"),
        ([{"role": "system", "content": [IMAGE_PART]}], "role 'system'"),
        ([{"role": "user", "content": [{"type": "video"}]}], "Invalid value: 'video'"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "cat.png"}}]}],
            "Expected a valid URL",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": "data:image/bmp;base64,AAAA"}}
                    ],
                }
            ],
            "unsupported image",
        ),
        (
            [{"role": "user", "content": [{"type": "file", "file": {"file_data": PNG_URL}}]}],
            "file.filename",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "file", "file": {"filename": "a", "file_data": "%PDF"}}],
                }
            ],
            "base64 data URL",
        ),
    ]
    with MockOpenAIServer([text_reply("ok")]) as server:
        for messages, problem in refused:
            response = post(client, server, messages=messages)
            assert response.status_code == 400 and problem in response.text, messages
        accepted = [{"role": "user", "content": [{"type": "text", "text": "hi"}, IMAGE_PART]}]
        assert post(client, server, messages=accepted).status_code == 200
