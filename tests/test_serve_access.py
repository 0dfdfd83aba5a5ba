"""Access control of create_app in process (ASGI, the peer's address set per request): loopback
peers without users, the hosts ``rxreact serve --insecure-no-auth`` keeps, tokens that cannot
be empty or short, token files, the security headers, and error texts that name no endpoint
on any protocol (a real model endpoint that refuses, one that answers HTML)."""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from serve_helpers import serving
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from rxreact import InMemoryChatMemory, OpenAIChatModel, ReactAgent
from rxreact.errors import ConfigurationError
from rxreact.serve import create_app
from rxreact.serve.auth import TokenAuthenticator
from rxreact.serve.cli import add_serve_command, served_hosts

ALICE = "alice-token-0123456789"
TEXT = {"type": "text", "text": "x"}
REMOTE = ("192.0.2.7", 40000)  # TEST-NET-1: never a real peer, only a scope["client"] here


@pytest.fixture(scope="module")
def agent() -> Iterator[ReactAgent]:
    model = OpenAIChatModel("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    yield ReactAgent(model, [], memory=InMemoryChatMemory())
    model.close()


def request(
    app: Any, method: str, path: str, *, peer: tuple[str, int] = ("127.0.0.1", 5000), **kw: Any
) -> httpx.Response:
    async def send() -> httpx.Response:
        transport = httpx.ASGITransport(app=app, client=peer)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            return await client.request(method, path, **kw)

    return asyncio.run(send())


def test_without_users_peers_must_be_loopback_whatever_host_they_name(agent: ReactAgent) -> None:
    app = create_app(agent, protocols=["ui"])
    refused = request(app, "GET", "/api/me", peer=REMOTE, headers={"host": "localhost"})
    assert refused.status_code == 403 and refused.json()["error"] == "peer_not_allowed"
    assert "--token-file" in refused.json()["detail"]
    for peer in ("127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"):
        assert request(app, "GET", "/api/me", peer=(peer, 1)).json() == {"user": None}
    # naming the hosts opts in to other peers; the Host check stays
    lan = create_app(agent, protocols=["ui"], allowed_hosts=["lan.example"])
    assert request(lan, "GET", "/api/me", peer=REMOTE, headers={"host": "lan.example"}).is_success
    evil = request(lan, "GET", "/api/me", peer=REMOTE, headers={"host": "evil.example"})
    assert evil.json()["error"] == "host_not_allowed"
    # with users, any peer may authenticate
    users = create_app(agent, protocols=["ui"], authenticate=TokenAuthenticator({ALICE: "a"}))
    assert request(users, "GET", "/api/me", peer=REMOTE).status_code == 401
    signed = request(
        users, "GET", "/api/me", peer=REMOTE, headers={"authorization": f"Bearer {ALICE}"}
    )
    assert signed.json() == {"user": "a"}


def test_insecure_no_auth_keeps_the_dns_rebinding_check(agent: ReactAgent) -> None:
    parser = argparse.ArgumentParser()
    add_serve_command(parser.add_subparsers())
    args = parser.parse_args(
        ["serve", "--insecure-no-auth", "--host", "10.1.2.3", "--allowed-host", "box.lan",
         "--allowed-host", "proxy.lan"]
    )  # fmt: skip
    assert args.unknown_resume == 204
    options = served_hosts(vars(args))
    assert "*" not in options["allowed_hosts"]
    app = create_app(agent, protocols=["ui"], **options)
    for host in ("localhost:8000", "127.0.0.1", "10.1.2.3:8000", "box.lan", "proxy.lan"):
        assert request(app, "GET", "/api/me", peer=REMOTE, headers={"host": host}).is_success
    rebound = request(app, "GET", "/api/me", peer=REMOTE, headers={"host": "evil.example"})
    assert rebound.status_code == 403 and rebound.json()["error"] == "host_not_allowed"
    # bound to every interface, only the names given (and loopback) are served
    anywhere = served_hosts({"insecure_no_auth": True, "host": "0.0.0.0"})["allowed_hosts"]
    assert "0.0.0.0" not in anywhere and "localhost" in anywhere and "*" not in anywhere
    assert served_hosts({"token_file": "t", "host": "0.0.0.0"}) == {}  # any host, with users
    assert parser.parse_args(["serve", "--unknown-resume", "404"]).unknown_resume == 404


@pytest.mark.parametrize("token", ["", "   ", "short", "x" * 15])
def test_empty_and_short_tokens_are_refused_at_construction(token: str) -> None:
    with pytest.raises(ConfigurationError, match="16"):
        TokenAuthenticator({token: "alice"})


def test_an_empty_presented_token_matches_nothing(agent: ReactAgent) -> None:
    app = create_app(agent, protocols=["ui"], authenticate=TokenAuthenticator({ALICE: "a"}))
    for header in ("Bearer ", "Bearer", "bearer  ", "", f"Basic {ALICE}"):
        assert request(app, "GET", "/api/me", headers={"authorization": header}).status_code == 401
    cookie = request(app, "GET", "/api/me", headers={"cookie": f"rxreact_token={ALICE}"})
    assert cookie.status_code == 401


def test_token_files_readable_by_others_twice_listed_bom_and_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "tokens.txt"
    path.write_bytes(f"\ufeff{ALICE} alice\n".encode())
    path.chmod(0o644)
    with pytest.raises(ConfigurationError, match=r"readable by other users.*chmod 600"):
        TokenAuthenticator.from_file(path)
    path.chmod(0o640)
    with pytest.raises(ConfigurationError, match="readable by other users"):
        TokenAuthenticator.from_file(path)
    path.chmod(0o600)
    assert TokenAuthenticator.from_file(path).secret  # the BOM is not part of the token
    assert TokenAuthenticator.from_file(path).secret == TokenAuthenticator({ALICE: "alice"}).secret
    path.write_text(f"{ALICE} alice\n{ALICE} bob\n")
    with pytest.raises(ConfigurationError, match=r"tokens\.txt:2: this token is listed already"):
        TokenAuthenticator.from_file(path)
    path.write_bytes(f"{ALICE} al\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigurationError, match="not UTF-8"):
        TokenAuthenticator.from_file(path)


def test_security_headers(agent: ReactAgent) -> None:
    app = create_app(agent, cors_origins=["http://app.example"])
    page = request(app, "GET", "/")
    policy = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy
    preflight = {"origin": "http://app.example", "access-control-request-method": "POST"}
    responses = [
        page,
        request(app, "GET", "/static/chat.js"),
        request(app, "GET", "/api/me"),
        request(app, "GET", "/v1/models"),
        request(app, "GET", "/api/me", headers={"host": "evil.example"}),  # the guard's own
        request(app, "OPTIONS", "/api/chat", headers=preflight),
    ]
    assert [r.headers.get("x-content-type-options") for r in responses] == ["nosniff"] * 6


def test_the_marble_svg_has_its_own_policy(agent: ReactAgent) -> None:
    from rxreact.model.scripted.replies import text_reply
    from rxreact.testing import MockOpenAIServer

    with MockOpenAIServer([text_reply("Hi.")]) as mock:
        model = OpenAIChatModel("m", base_url=mock.base_url, api_key="k")
        app = create_app(ReactAgent(model, []), protocols=["ui"])
        chat = {
            "id": "svg",
            "messages": [{"role": "user", "parts": [{"type": "text", "text": "x"}]}],
        }
        run_id = request(app, "POST", "/api/chat", json=chat).headers["x-rxreact-run-id"]
        svg = request(app, "GET", f"/api/runs/{run_id}/marbles.svg")
        model.close()
    assert svg.headers["content-type"].startswith("image/svg+xml")
    assert svg.headers["content-security-policy"] == (
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
    )
    assert svg.headers["x-content-type-options"] == "nosniff"


# -- error texts name no endpoint --------------------------------------------------------------


@pytest.fixture(scope="module")
def html_404() -> Iterator[str]:
    """A server that is not a model API: every path a 404 HTML page."""

    async def nothing(request: Any) -> HTMLResponse:
        return HTMLResponse("<html><body>Not Found</body></html>", 404)

    routes = [Route("/{path:path}", nothing, methods=["GET", "POST"])]
    with serving(Starlette(routes=routes)) as url:
        yield url


def every_protocols_error(app: Any) -> list[str]:
    """What each protocol tells its client of a run that failed on its model."""
    chat = {"id": "e1", "messages": [{"role": "user", "parts": [TEXT]}]}
    completion = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    ag_ui = {
        "threadId": "e2", "runId": "r", "state": {}, "tools": [], "context": [],
        "forwardedProps": {}, "messages": [{"id": "u", "role": "user", "content": "x"}],
    }  # fmt: skip
    a2a = {
        "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m", "parts": [{"text": "x"}]}},
    }  # fmt: skip
    return [
        request(app, "POST", "/api/chat", json=chat).text,
        request(app, "POST", "/v1/chat/completions", json=completion).text,
        request(app, "POST", "/v1/chat/completions", json={**completion, "stream": True}).text,
        request(app, "POST", "/ag-ui", json=ag_ui).text,
        request(app, "POST", "/a2a", json=a2a, headers={"a2a-version": "1.0"}).text,
    ]


@pytest.mark.parametrize("endpoint", ["refused", "html"])
def test_error_texts_name_no_endpoint_on_any_protocol(
    endpoint: str, html_404: str, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("a2a")
    pytest.importorskip("ag_ui")
    base_url = "http://127.0.0.1:1/v1" if endpoint == "refused" else f"{html_404}/internal/v1"
    model = OpenAIChatModel("m", base_url=base_url, api_key="k", max_retries=0)
    app = create_app(ReactAgent(model, [], memory=InMemoryChatMemory()))
    with caplog.at_level(logging.WARNING, logger="rxreact.serve"):
        texts = every_protocols_error(app)
    model.close()
    kind = "ModelConnectionError" if endpoint == "refused" else "NotFoundError"
    port = base_url.split(":")[2].split("/")[0]  # in the log, not in any answer
    for text in texts:
        assert kind in text, text
        assert "127.0.0.1" not in text and "/internal" not in text and "/v1/chat" not in text
    # the operator's log has the whole of it, once per run
    logged = [r.getMessage() for r in caplog.records if r.name == "rxreact.serve"]
    assert len(logged) == 5 and all(port in line for line in logged)


def test_scrub_replaces_urls_hosts_and_addresses_not_times() -> None:
    from rxreact.serve._client_errors import scrub

    text = (
        "cannot connect to 127.0.0.1:1 ('10.0.0.5', 1); POST http://10.255.255.1:9/v1/x → 404; "
        "model.internal:8080, [::1]:80, localhost:1234; at 12:30 context_length_exceeded"
    )
    assert scrub(text) == (
        "cannot connect to <endpoint> ('<endpoint>', 1); POST <endpoint> → 404; "
        "<endpoint>, <endpoint>, <endpoint>; at 12:30 context_length_exceeded"
    )
