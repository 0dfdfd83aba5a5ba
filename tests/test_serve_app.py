"""create_app over real sockets: the UI message stream, resume, cancel, heartbeats, errors."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from serve_helpers import Gate, SSEEvent, chat_servers, parse_sse, read_until_text, text_of

from rxreact import InvalidArgumentError, OpenAIChatModel, ReactAgent
from rxreact.model.scripted.replies import HTTPErrorReply, text_reply, tool_call_reply
from rxreact.serve import create_app


@pytest.fixture
def make_server() -> Iterator[Any]:
    with chat_servers() as start:
        yield start


def chat_body(conversation: str, question: str) -> dict[str, Any]:
    return {
        "id": conversation,
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": question}]}],
        "trigger": "submit-message",
    }


def events_of(response: httpx.Response) -> Iterator[SSEEvent | str]:
    return parse_sse(response.iter_lines())


def read_all(response: httpx.Response) -> tuple[list[SSEEvent], list[str]]:
    events: list[SSEEvent] = []
    comments: list[str] = []
    for item in events_of(response):
        (comments.append if isinstance(item, str) else events.append)(item)  # type: ignore[operator]
    return events, comments


def test_plain_answer_is_a_ui_message_stream(make_server: Any) -> None:
    url, _, _ = make_server([text_reply("Hello from rxreact.", pieces=4)])
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c1", "Hi")) as response:
        assert response.status_code == 200
        assert response.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert response.headers["content-type"].startswith("text/event-stream")
        run_id = response.headers["x-rxreact-run-id"]
        events, _ = read_all(response)

    assert events[-1].data == "[DONE]" and events[-1].id is None
    parts = [e.part for e in events[:-1]]
    assert parts[0] == {"type": "start", "messageId": run_id}
    assert parts[-1] == {"type": "finish", "finishReason": "stop"}
    assert text_of(parts) == "Hello from rxreact."
    seqs = [int(e.id) for e in events[:-1] if e.id is not None]
    assert seqs == sorted(seqs) and seqs[0] == 1


def test_tool_round_streams_inputs_and_outputs(make_server: Any) -> None:
    url, _, _ = make_server(
        [tool_call_reply(("get_weather", {"city": "Paris"})), text_reply("Sunny in Paris.")]
    )
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c2", "Paris?")) as response:
        parts = [e.part for e in read_all(response)[0][:-1]]
    available = [p for p in parts if p["type"] == "tool-input-available"]
    assert available == [
        {"type": "tool-input-available", "toolCallId": "call_0", "toolName": "get_weather",
         "input": {"city": "Paris"}}
    ]  # fmt: skip
    outputs = [p for p in parts if p["type"] == "tool-output-available"]
    assert outputs == [
        {"type": "tool-output-available", "toolCallId": "call_0", "output": "Paris: sunny, 21°C"}
    ]
    assert text_of(parts) == "Sunny in Paris."


def test_model_error_is_an_error_part_not_a_broken_stream(make_server: Any) -> None:
    url, _, _ = make_server([HTTPErrorReply(400, "context too long")])
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c3", "Hi")) as response:
        assert response.status_code == 200
        events, _ = read_all(response)
    parts = [e.part for e in events[:-1]]
    (error,) = [p for p in parts if p["type"] == "error"]
    assert error["errorText"].startswith("BadRequestError")
    assert parts[-1] == {"type": "finish", "finishReason": "error"}
    assert events[-1].data == "[DONE]"


def test_disconnect_does_not_cancel_and_last_event_id_resumes(make_server: Any) -> None:
    gate = Gate()
    reply = text_reply("One two three four five six")  # role, a chunk per word, finish
    url, mock, _ = make_server([gate.reply(reply[:4], reply[4:])])
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c4", "Count")) as response:
        seen = read_until_text(events_of(response), "One two three ")  # then leave mid-answer
    last_id = seen[-1].id
    assert last_id is not None
    with httpx.stream(
        "GET", f"{url}/api/chat/c4/stream", headers={"Last-Event-ID": last_id}
    ) as response:
        assert response.status_code == 200
        gate.open()  # only now: the run is still active when the resume asks for it
        events, _ = read_all(response)
    parts = [e.part for e in events[:-1]]
    assert all(int(e.id) > int(last_id) for e in events if e.id is not None)
    assert "text-start" not in [p["type"] for p in parts]  # the part the client holds goes on
    assert text_of([e.part for e in seen]) + text_of(parts) == "One two three four five six"
    assert mock.disconnects == 0  # the model stream was never cut


def test_resume_without_last_event_id_replays_the_run(make_server: Any) -> None:
    gate = Gate()
    reply = text_reply("Alpha beta gamma")
    url, _, _ = make_server([gate.reply(reply[:3], reply[3:])])
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c5", "Go")) as response:
        for item in events_of(response):
            if isinstance(item, SSEEvent) and item.part["type"] == "text-delta":
                break
    with httpx.stream("GET", f"{url}/api/chat/c5/stream") as response:
        assert response.status_code == 200
        gate.open()
        parts = [e.part for e in read_all(response)[0][:-1]]
    assert parts[0]["type"] == "start"
    assert text_of(parts) == "Alpha beta gamma"


def test_idle_conversation_resume_is_204_and_unknown_is_404(make_server: Any) -> None:
    url, _, _ = make_server([text_reply("Done.")], unknown_resume=404)
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c6", "Hi")) as response:
        read_all(response)
    assert httpx.get(f"{url}/api/chat/c6/stream").status_code == 204
    unknown = httpx.get(f"{url}/api/chat/nobody/stream")
    assert unknown.status_code == 404
    assert unknown.json()["error"] == "unknown_conversation"
    assert httpx.post(f"{url}/api/chat/nobody/cancel").status_code == 404
    assert httpx.post(f"{url}/api/chat/c6/cancel").json() == {"cancelled": False, "runId": None}


def test_cancel_stops_the_run_and_the_stream_ends_with_abort(make_server: Any) -> None:
    gate = Gate()
    reply = text_reply("Never finished answer", pieces=3)
    url, _, _ = make_server([gate.reply(reply[:2], reply[2:])])
    try:
        with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c7", "Go")) as response:
            parts: list[dict[str, Any]] = []
            for item in events_of(response):
                if not isinstance(item, SSEEvent) or item.data == "[DONE]":
                    continue
                parts.append(item.part)
                if item.part["type"] == "text-delta":
                    cancelled = httpx.post(f"{url}/api/chat/c7/cancel")
                    assert cancelled.status_code == 202
                    assert cancelled.json()["cancelled"] is True
        assert parts[-1] == {"type": "abort", "reason": "cancelled"}
        assert httpx.get(f"{url}/api/chat/c7/stream").status_code in (204, 404)
    finally:
        gate.open()


def test_heartbeat_comments_while_the_run_is_quiet(make_server: Any) -> None:
    gate = Gate()
    reply = text_reply("Slow answer")
    url, _, _ = make_server([gate.reply(reply[:2], reply[2:])], heartbeat=0.05)
    try:
        with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c8", "Go")) as response:
            items = events_of(response)
            seen: list[SSEEvent | str] = []
            for item in items:
                if item == ": keep-alive":
                    break
                seen.append(item)
            gate.open()  # the run was quiet long enough for a heartbeat; now it goes on
            events = [i for i in [*seen, *items] if isinstance(i, SSEEvent)]
        assert events[-1].data == "[DONE]"
        assert text_of([e.part for e in events[:-1]]) == "Slow answer"
    finally:
        gate.open()


def message(role: str) -> str:
    return f'{{"role": "{role}", "parts": [{{"type": "text", "text": "x"}}]}}'


BAD_BODIES = [
    ("{not json", 400, "malformed_json"),
    ('{"messages": []}', 422, "invalid_body"),
    (f'{{"id": "a\\nb", "messages": [{message("user")}]}}', 400, "invalid_conversation_id"),
    (f'{{"id": "", "messages": [{message("user")}]}}', 400, "invalid_conversation_id"),
    (f'{{"id": "c", "messages": [{message("assistant")}]}}', 422, "invalid_body"),
]


def test_a_conversation_id_follows_the_python_apis_rule(make_server: Any) -> None:
    # The same rule as ReactAgent.stream: spaces, "/" and any script are fine, so the URLs of
    # such a conversation (percent-encoded, as the page sends them) must reach it too.
    url, _, _ = make_server([text_reply("Done.")])
    conversation = "team a/chat é"
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body(conversation, "Hi")) as response:
        assert response.status_code == 200
        read_all(response)
    encoded = quote(conversation, safe="")
    assert httpx.get(f"{url}/api/chat/{encoded}/stream").status_code == 204
    cancel = httpx.post(f"{url}/api/chat/{encoded}/cancel")
    assert cancel.json() == {"cancelled": False, "runId": None}
    too_long = httpx.get(f"{url}/api/chat/{'x' * 201}/stream")
    assert (too_long.status_code, too_long.json()["error"]) == (400, "invalid_conversation_id")
    assert "at most 200 characters" in too_long.json()["detail"]


def test_bad_requests_get_json_errors(make_server: Any) -> None:
    url, _, _ = make_server([])
    answers = [
        httpx.post(f"{url}/api/chat", content=body, headers={"content-type": "application/json"})
        for body, _, _ in BAD_BODIES
    ]
    assert [(a.status_code, a.json()["error"]) for a in answers] == [
        (status, error) for _, status, error in BAD_BODIES
    ]
    bad_id = httpx.get(f"{url}/api/chat/c1/stream", headers={"Last-Event-ID": "x"})
    assert (bad_id.status_code, bad_id.json()["error"]) == (400, "invalid_last_event_id")


def test_marble_svg_of_a_finished_run_and_the_page(make_server: Any) -> None:
    url, _, _ = make_server([text_reply("Drawn.")])
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c9", "Hi")) as response:
        run_id = response.headers["x-rxreact-run-id"]
        read_all(response)
    svg = httpx.get(f"{url}/api/runs/{run_id}/marbles.svg")
    assert svg.status_code == 200
    assert svg.headers["content-type"].startswith("image/svg+xml")
    assert svg.text.lstrip().startswith("<svg") and "text" in svg.text
    page = httpx.get(f"{url}/")
    assert page.status_code == 200 and "<title>rxreact" in page.text
    assert httpx.get(f"{url}/static/chat.js").status_code == 200


def test_concurrent_chats_each_get_their_own_whole_answer(make_server: Any) -> None:
    def reply(request: Any) -> Any:
        question = request.messages[-1].content
        return text_reply(f"Answer to {question}, streamed in several pieces.")

    url, _, _ = make_server(reply)
    count = 12

    def chat(n: int) -> str:
        with httpx.stream("POST", f"{url}/api/chat", json=chat_body(f"many-{n}", f"q{n}")) as r:
            events, _ = read_all(r)
        assert events[-1].data == "[DONE]"
        return text_of([e.part for e in events[:-1]])

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(chat, range(count)))
    assert answers == [f"Answer to q{n}, streamed in several pieces." for n in range(count)]


def test_a_finished_run_replays_whole_and_an_unknown_run_is_404(make_server: Any) -> None:
    url, _, _ = make_server([tool_call_reply(("get_weather", {"city": "Oslo"})), text_reply("Ok.")])
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c10", "Oslo?")) as response:
        run_id = response.headers["x-rxreact-run-id"]
        live, _ = read_all(response)
    with httpx.stream("GET", f"{url}/api/runs/{run_id}/stream") as response:
        assert response.status_code == 200
        replayed, _ = read_all(response)
    assert [(e.id, e.data) for e in replayed] == [(e.id, e.data) for e in live]
    unknown = httpx.get(f"{url}/api/runs/no-such-run/stream")
    assert unknown.status_code == 404
    assert unknown.json()["error"] == "unknown_run"


def test_a_question_on_a_busy_conversation_is_409_with_on_busy_reject(make_server: Any) -> None:
    gate = Gate()
    reply = text_reply("Busy with the first question.")
    url, _, _ = make_server([gate.reply(reply[:2], reply[2:])], agent_options={"on_busy": "reject"})
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("busy", "First")) as response:
        items = events_of(response)
        read_until_text(items, "Busy ")
        second = httpx.post(f"{url}/api/chat", json=chat_body("busy", "Second"))
        assert second.status_code == 409
        assert second.json()["error"] == "conversation_busy"
        gate.open()
        rest = [e for e in items if isinstance(e, SSEEvent)]
    assert rest[-1].data == "[DONE]"
    assert rest[-2].part == {"type": "finish", "finishReason": "stop"}


def test_marbles_of_an_unknown_run_are_404(make_server: Any) -> None:
    url, _, _ = make_server([])
    response = httpx.get(f"{url}/api/runs/no-such-run/marbles.svg")
    assert response.status_code == 404
    assert response.json()["error"] == "unknown_run"


def test_unknown_resume_answers_204_by_default_as_use_chat_expects(make_server: Any) -> None:
    url, _, _ = make_server([])
    assert httpx.get(f"{url}/api/chat/brand-new/stream").status_code == 204


def test_create_app_checks_its_arguments() -> None:
    agent = ReactAgent(OpenAIChatModel("mock", base_url="http://127.0.0.1:9/v1", api_key="k"))
    with pytest.raises(InvalidArgumentError, match="unknown_resume"):
        create_app(agent, unknown_resume=200)
    with pytest.raises(InvalidArgumentError, match="heartbeat"):
        create_app(agent, heartbeat=0)


def test_protocols_choose_what_is_mounted() -> None:
    from starlette.testclient import TestClient

    # an app without users serves loopback peers only: the test client says it is one
    local = {"base_url": "http://127.0.0.1", "client": ("127.0.0.1", 50000)}

    from rxreact import InvalidArgumentError, ReactAgent, ScriptedModel
    from rxreact.serve import create_app

    agent = ReactAgent(ScriptedModel([]))
    only_openai = TestClient(create_app(agent, protocols=("openai",)), **local)
    assert only_openai.get("/v1/models").status_code == 200
    assert only_openai.get("/").status_code == 404
    only_ui = TestClient(create_app(agent, protocols=["ui"]), **local)
    assert only_ui.get("/").status_code == 200
    assert only_ui.get("/v1/models").status_code == 404
    with pytest.raises(InvalidArgumentError, match="protocols must name some of ui, openai"):
        create_app(agent, protocols=("ui", "soap"))
