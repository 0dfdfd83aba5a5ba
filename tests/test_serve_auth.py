"""Users, origins and limits of create_app over real sockets: two users trying every endpoint
on each other's ids, cross-site requests, DNS rebinding, bodies of every wrong shape and size,
a hostile Last-Event-ID, runs in flight per user."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import Gate, SSEEvent, chat_servers, parse_sse, read_until_text, text_of

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent
from rxreact.errors import ConfigurationError
from rxreact.model.scripted.replies import text_reply
from rxreact.serve import create_app
from rxreact.serve.auth import RunIds, TokenAuthenticator, conversation_key
from rxreact.serve.cli import is_loopback

ALICE, BOB = "alice-token-0123456789", "bob-token-9876543210xx"
USERS = TokenAuthenticator({ALICE: "alice", BOB: "bob"})


@pytest.fixture
def make_server() -> Iterator[Any]:
    with chat_servers() as start:
        yield start


def as_user(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def chat_body(conversation: str, question: str) -> dict[str, Any]:
    return {
        "id": conversation,
        "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": question}]}],
    }


def answer_of(response: httpx.Response) -> str:
    """The text a UI message stream response (streamed or read) spelled out."""
    lines = response.iter_lines() if not response.is_closed else iter(response.text.splitlines())
    events = [e for e in parse_sse(lines) if isinstance(e, SSEEvent)]
    assert events[-1].data == "[DONE]"
    return text_of([e.part for e in events[:-1]])


def test_each_user_gets_404_on_every_endpoint_with_the_others_ids(make_server: Any) -> None:
    gate = Gate()
    slow = text_reply("Alice's long answer")
    url, mock, app = make_server(
        [gate.reply(slow[:2], slow[2:]), text_reply("Bob's own answer.")],
        authenticate=USERS,
        unknown_resume=404,
    )
    alice, bob = as_user(ALICE), as_user(BOB)
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c1", "Hi"), headers=alice) as r:
        assert r.status_code == 200
        run_id = r.headers["x-rxreact-run-id"]
        items = parse_sse(r.iter_lines())
        seen = read_until_text(items, "Alice's ")  # alice's run is live now
        bare_run = run_id.rsplit(".", 1)[0]

        def status(method: str, path: str, **kwargs: Any) -> int:
            return httpx.request(method, f"{url}{path}", headers=bob, **kwargs).status_code

        approval = {"approvalId": "call_0", "approved": True}
        assert status("GET", "/api/chat/c1/stream") == 404  # bob has no conversation c1
        assert status("POST", "/api/chat/c1/cancel") == 404
        assert status("POST", "/api/chat/c1/approve", json=approval) == 404
        for run in (run_id, bare_run, f"{bare_run}.{'A' * 20}"):
            assert status("GET", f"/api/runs/{run}/stream") == 404
            assert status("GET", f"/api/runs/{run}/marbles.svg") == 404
        # bob's own c1 is another conversation: not busy with alice's run, answered for bob
        with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c1", "Yo"), headers=bob) as b:
            assert b.status_code == 200
            assert answer_of(b) == "Bob's own answer."
        gate.open()
        rest = [e for e in items if isinstance(e, SSEEvent)]
        assert rest[-1].data == "[DONE]"
        assert text_of([e.part for e in seen + rest[:-1]]) == "Alice's long answer"
    # alice's own ids still work for alice
    with httpx.stream("GET", f"{url}/api/runs/{run_id}/stream", headers=alice) as replay:
        assert replay.status_code == 200 and answer_of(replay) == "Alice's long answer"
    assert httpx.get(f"{url}/api/runs/{run_id}/marbles.svg", headers=alice).status_code == 200
    assert httpx.get(f"{url}/api/chat/c1/stream", headers=alice).status_code == 204
    # the memory is namespaced; bob's model request never saw alice's turn
    memory = app.state.runs.agent.memory
    assert sorted(memory.conversation_ids()) == ["alice/c1", "bob/c1"]
    assert [m["content"] for m in mock.requests[1]["messages"] if m["role"] == "user"] == ["Yo"]
    assert httpx.get(f"{url}/api/me", headers=bob).json() == {"user": "bob"}


def test_no_token_wrong_token_and_no_cookie(make_server: Any) -> None:
    url, _, _ = make_server([text_reply("Hi.")], authenticate=USERS)
    unauthorized = httpx.post(f"{url}/api/chat", json=chat_body("c1", "Hi"))
    assert unauthorized.status_code == 401
    assert unauthorized.json()["error"] == "unauthorized"
    assert unauthorized.headers["www-authenticate"].startswith("Bearer")
    assert httpx.get(f"{url}/api/me", headers=as_user("x" * 22)).status_code == 401
    assert httpx.get(f"{url}/v1/models").status_code == 401
    # the page and its scripts are public: the page is what asks for the token
    assert httpx.get(f"{url}/").status_code == 200
    assert httpx.get(f"{url}/static/auth.js").status_code == 200
    # no cookie carries a token (any app on another port of this host would read it)
    assert httpx.get(f"{url}/api/me", cookies={"rxreact_token": ALICE}).status_code == 401


def test_an_async_authenticator(make_server: Any) -> None:
    async def authenticate(request: Any) -> str | None:
        return "carol" if request.headers.get("x-user") == "carol" else None

    url, _, _ = make_server([], authenticate=authenticate)
    assert httpx.get(f"{url}/api/me", headers={"x-user": "carol"}).json() == {"user": "carol"}
    assert httpx.get(f"{url}/api/me").status_code == 401


def test_a_cross_site_post_is_refused_before_any_run(make_server: Any) -> None:
    # What a page on evil.example can make a browser send without a preflight.
    url, mock, _ = make_server([text_reply("Should never run.")])
    evil = {"origin": "http://evil.example", "content-type": "text/plain"}
    body = '{"id":"c1","messages":[{"role":"user","parts":[{"type":"text","text":"rm -rf"}]}]}'
    refused = httpx.post(f"{url}/api/chat", content=body, headers=evil)
    assert refused.status_code == 403 and refused.json()["error"] == "origin_not_allowed"
    for path in ("/api/chat/c1/cancel", "/api/chat/c1/approve", "/v1/chat/completions"):
        assert httpx.post(f"{url}{path}", content=body, headers=evil).status_code == 403
    browser_no_origin = {"sec-fetch-site": "cross-site", "content-type": "text/plain"}
    assert httpx.post(f"{url}/api/chat", content=body, headers=browser_no_origin).status_code == 403
    cookie_no_origin = httpx.post(f"{url}/api/chat", content=body, cookies={"a": "b"})
    assert cookie_no_origin.status_code == 403
    assert mock.requests == []  # nothing reached the model: no key spent, no tool called
    own = httpx.post(f"{url}/api/chat", content=body, headers={"origin": url})
    assert own.status_code == 200 and answer_of(own) == "Should never run."


def test_cors_origins_are_allowed_and_answered(make_server: Any) -> None:
    url, _, _ = make_server([text_reply("Hello app.")], cors_origins=["https://app.example"])
    preflight = httpx.options(
        f"{url}/api/chat",
        headers={
            "origin": "https://app.example",
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://app.example"
    allowed = httpx.post(
        f"{url}/api/chat", json=chat_body("c1", "Hi"), headers={"origin": "https://app.example"}
    )
    assert allowed.status_code == 200 and answer_of(allowed) == "Hello app."
    assert allowed.headers["access-control-allow-origin"] == "https://app.example"
    other = {"origin": "https://other.example"}
    refused = httpx.post(f"{url}/api/chat", json=chat_body("c2", "Hi"), headers=other)
    assert refused.status_code == 403


def test_anonymous_mode_answers_only_loopback_host_names(make_server: Any) -> None:
    # DNS rebinding: evil.example re-pointed at 127.0.0.1 sends its own name as Host.
    url, _, _ = make_server([text_reply("Hi.")])
    rebound = httpx.get(f"{url}/api/chat/c1/stream", headers={"host": "evil.example"})
    assert rebound.status_code == 403 and rebound.json()["error"] == "host_not_allowed"
    assert "--insecure-no-auth" in rebound.json()["detail"]
    port = url.rsplit(":", 1)[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost"):
        assert httpx.get(f"{url}/api/me", headers={"host": host}).json() == {"user": None}
    anywhere, _, _ = make_server([], allowed_hosts=["*"])
    assert httpx.get(f"{anywhere}/api/me", headers={"host": "lan.example"}).status_code == 200


def test_bodies_of_every_wrong_shape_and_size(make_server: Any) -> None:
    url, mock, _ = make_server([], max_body_bytes=4096, max_message_chars=100)

    def post(path: str, **kwargs: Any) -> tuple[int, str]:
        response = httpx.post(f"{url}{path}", **kwargs)
        error = response.json()["error"]
        return response.status_code, error["code"] if path.startswith("/v1/") else error

    big = "x" * 5000
    assert post("/api/chat", content=big) == (413, "body_too_large")  # declared length

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it is read
        for _ in range(10):
            yield b"x" * 1000

    assert post("/api/chat", content=chunked()) == (413, "body_too_large")
    assert post("/v1/chat/completions", content=big) == (413, "body_too_large")
    assert post("/api/chat/c1/approve", content=big) == (413, "body_too_large")
    assert post("/api/chat", content=b"{not json") == (400, "malformed_json")
    assert post("/api/chat", content=b"") == (400, "malformed_json")
    bad_part = {"id": "c1", "messages": [{"role": "user", "parts": [{"type": 1}]}]}
    for wrong in ([], {"id": "c1"}, {"id": "c1", "messages": []}, {"id": 5}, bad_part):
        assert post("/api/chat", json=wrong) == (422, "invalid_body")
    assert post("/api/chat", json=chat_body("a\tb", "Hi")) == (400, "invalid_conversation_id")
    assert post("/api/chat", json=chat_body("c1", "y" * 101)) == (413, "message_too_long")
    assert post("/api/chat/c1/approve", json={"approvalId": 3}) == (422, "invalid_body")
    completion = {"messages": [{"role": "user", "content": "z" * 101}]}
    assert post("/v1/chat/completions", json=completion) == (413, "message_too_long")
    assert post("/v1/chat/completions", json={"messages": []}) == (422, "invalid_body")
    assistant_last = {"messages": [{"role": "assistant", "content": "Hi"}]}
    assert post("/v1/chat/completions", json=assistant_last) == (422, "invalid_body")
    assert mock.requests == []


def test_a_hostile_last_event_id_is_a_400(make_server: Any) -> None:
    url, _, _ = make_server([text_reply("Hi.")])
    with httpx.stream("POST", f"{url}/api/chat", json=chat_body("c1", "Hi")) as response:
        run_id = response.headers["x-rxreact-run-id"]
        answer_of(response)
    for hostile in (b"-1", b"1e9", "²".encode(), b"9" * 5000, b"1; DROP", b"0x10"):
        for path in (f"/api/runs/{run_id}/stream", "/api/chat/c1/stream"):
            got = httpx.get(f"{url}{path}", headers={"last-event-id": hostile})
            assert got.status_code == 400, (hostile, path)
            assert got.json()["error"] == "invalid_last_event_id"
    far = httpx.get(f"{url}/api/runs/{run_id}/stream", headers={"last-event-id": "9" * 18})
    assert far.status_code == 200 and far.text.strip() == "data: [DONE]"


def test_runs_in_flight_per_user_are_limited_with_retry_after(make_server: Any) -> None:
    gates = [Gate(), Gate()]
    replies = [text_reply(f"Answer {n}") for n in range(2)]
    url, _, _ = make_server(
        [g.reply(r[:2], r[2:]) for g, r in zip(gates, replies, strict=True)]
        + [text_reply("Bob answers.")],
        authenticate=USERS,
        max_runs_per_user=2,
    )
    alice = as_user(ALICE)
    with (
        httpx.stream("POST", f"{url}/api/chat", json=chat_body("a", "1"), headers=alice) as one,
        httpx.stream("POST", f"{url}/api/chat", json=chat_body("b", "2"), headers=alice) as two,
    ):
        third = httpx.post(f"{url}/api/chat", json=chat_body("c", "3"), headers=alice)
        assert third.status_code == 429 and third.json()["error"] == "too_many_runs"
        assert int(third.headers["retry-after"]) > 0
        openai = {"messages": [{"role": "user", "content": "4"}]}
        limited = httpx.post(f"{url}/v1/chat/completions", json=openai, headers=alice)
        assert limited.status_code == 429
        # another user is not limited by alice's runs
        bob = httpx.post(f"{url}/api/chat", json=chat_body("c", "3"), headers=as_user(BOB))
        assert bob.status_code == 200 and answer_of(bob) == "Bob answers."
        for gate in gates:
            gate.open()
        assert answer_of(one) == "Answer 0" and answer_of(two) == "Answer 1"


def test_keys_and_run_ids_of_the_anonymous_user_are_unchanged() -> None:
    assert conversation_key("", "c1") == "c1"  # data from before users existed keeps working
    assert conversation_key("alice", "c1") == "alice/c1"
    ids = RunIds(b"k" * 32)
    assert ids.public("", "r1") == "r1" and ids.private("", "r1") == "r1"
    public = ids.public("alice", "r1")
    assert ids.private("alice", public) == "r1"
    assert ids.private("bob", public) is None and ids.private("alice", "r1") is None
    # another worker with the same secret recognises the id
    assert RunIds(b"k" * 32).private("alice", public) == "r1"
    assert RunIds(b"j" * 32).private("alice", public) is None


def test_token_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.txt"
    path.write_text(f"# users\n{ALICE} alice\n\n{BOB}   bob  # the other one\n")
    path.chmod(0o600)
    authenticator = TokenAuthenticator.from_file(path)
    assert authenticator.secret == TokenAuthenticator.from_file(path).secret
    path.write_text("short alice\n")
    with pytest.raises(ConfigurationError, match=r"tokens\.txt:1"):
        TokenAuthenticator.from_file(path)
    with pytest.raises(ConfigurationError, match="cannot read"):
        TokenAuthenticator.from_file(tmp_path / "missing.txt")
    path.write_text("# nobody\n")
    with pytest.raises(ConfigurationError, match="at least one token"):
        TokenAuthenticator.from_file(path)


def test_invalid_limits_are_refused() -> None:
    agent = ReactAgent(OpenAIChatModel("m", base_url="http://127.0.0.1:9", api_key="k"),
                       memory=InMemoryChatMemory())  # fmt: skip
    with pytest.raises(ValueError, match="max_body_bytes"):
        create_app(agent, max_body_bytes=0)
    with pytest.raises(ValueError, match="max_message_chars"):
        create_app(agent, max_message_chars=-1)


def test_serve_refuses_a_non_loopback_host_without_tokens(capsys: Any) -> None:
    from rxreact.cli import main

    assert main(["serve", "--demo", "--host", "0.0.0.0", "--port", "0"]) == 2
    message = capsys.readouterr().err
    assert "--token-file" in message and "--insecure-no-auth" in message
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2")
    assert not is_loopback("my-host")  # a name may resolve to anything


def test_serve_with_a_token_file(tmp_path: Path) -> None:
    from test_serve_workers import rxreact_serve

    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{ALICE} alice\n")
    tokens.chmod(0o600)
    memory = str(tmp_path / "memory.db")
    with rxreact_serve(
        dict(os.environ), "--demo", "--memory", memory, "--token-file", str(tokens)
    ) as url:
        assert httpx.get(f"{url}/api/me").status_code == 401
        assert httpx.get(f"{url}/api/me", headers=as_user(ALICE)).json() == {"user": "alice"}
        body = chat_body("c1", "Weather in Paris?")
        with httpx.stream("POST", f"{url}/api/chat", json=body, headers=as_user(ALICE)) as r:
            assert r.status_code == 200 and answer_of(r)
    bad = tmp_path / "bad.txt"
    bad.write_text("short alice\n")
    bad.chmod(0o600)
    from rxreact.cli import main

    assert main(["serve", "--demo", "--memory", memory, "--token-file", str(bad)]) == 2


def test_a_websocket_handshake_from_a_foreign_origin_is_refused() -> None:
    from starlette.applications import Starlette
    from starlette.routing import WebSocketRoute
    from starlette.testclient import TestClient
    from starlette.websockets import WebSocket, WebSocketDisconnect

    from rxreact.serve._guard import Guard

    async def echo(socket: WebSocket) -> None:
        await socket.accept()
        await socket.send_text("hello")
        await socket.close()

    inner = Starlette(routes=[WebSocketRoute("/ws", echo)])
    app = Guard(inner, authenticate=USERS, cors_origins=(), allowed_hosts=None, max_body_bytes=10)
    client = TestClient(app, base_url="http://testserver")
    with client.websocket_connect(
        "/ws", headers={"origin": "http://testserver", **as_user(ALICE)}
    ) as socket:
        assert socket.receive_text() == "hello"
    for headers in ({"origin": "http://evil.example", **as_user(ALICE)},
                    {"origin": "http://testserver"}):  # fmt: skip
        with (
            pytest.raises(WebSocketDisconnect) as closed,
            client.websocket_connect("/ws", headers=headers),
        ):
            pass
        assert closed.value.code == 1008


def test_two_processes_with_one_token_file_share_users_and_run_ids(tmp_path: Path) -> None:
    from redis_server import running_redis_server
    from test_serve_workers import rxreact_serve

    from rxreact.testing import MockOpenAIServer

    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"{ALICE} alice\n{BOB} bob\n")
    tokens.chmod(0o600)
    gate = Gate()
    reply = text_reply("Started here, read there.")
    with (
        running_redis_server() as redis,
        MockOpenAIServer([gate.reply(reply[:3], reply[3:])]) as mock,
    ):
        env = {**os.environ, "OPENAI_BASE_URL": mock.base_url, "OPENAI_API_KEY": "sk-test",
               "RXREACT_MODEL": "mock"}  # fmt: skip
        options = ("--redis", redis.url, "--token-file", str(tokens))
        try:
            with rxreact_serve(env, *options) as first, rxreact_serve(env, *options) as second:
                chat = chat_body("shared", "Go")
                with httpx.stream(
                    "POST", f"{first}/api/chat", json=chat, headers=as_user(ALICE)
                ) as r:
                    run_id = r.headers["x-rxreact-run-id"]
                    read_until_text(parse_sse(r.iter_lines()), "Started ")
                # the other process knows alice's run id and alice's conversation, not bob's
                replay = f"{second}/api/runs/{run_id}/stream"
                assert httpx.get(replay, headers=as_user(BOB)).status_code == 404
                # rxreact serve answers an unknown chat's resume 204: as for a chat never begun
                bobs = httpx.get(f"{second}/api/chat/shared/stream", headers=as_user(BOB))
                assert bobs.status_code == 204
                with httpx.stream("GET", replay, headers=as_user(ALICE)) as r:
                    assert r.status_code == 200
                    gate.open()
                    assert answer_of(r) == "Started here, read there."
        finally:
            Gate.open_all()


def test_conversation_keys_of_two_users_never_meet() -> None:
    """Conversation ids may hold '/', so the user part is percent-encoded: the first '/' ends
    it, and 'a/b' + 'c' is not 'a' + 'b/c'."""
    from rxreact.serve._body import HTTPProblem
    from rxreact.serve.auth import conversation_key

    assert conversation_key("a/b", "c") != conversation_key("a", "b/c")
    assert conversation_key("", "b/c") == "b/c"  # the anonymous user keeps plain ids
    with pytest.raises(HTTPProblem) as info:
        conversation_key("alice", "x" * 200)  # fits alone, not with the user's name
    assert info.value.error == "invalid_conversation_id"
