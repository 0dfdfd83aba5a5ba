"""Shared test fixtures."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from postgres_server import PostgresServer, shared_postgres_server
from redis_cluster import LocalCluster, running_redis_cluster
from redis_server import RedisServer, running_redis_server

from rxreact._redis import close_redis
from rxreact.model.openai.client import OpenAIChatModel
from rxreact.model.scripted.replies import Script
from rxreact.testing import MockOpenAIServer

# Property tests check results, not speed: hypothesis's per-example deadline turns a busy CI
# machine into false failures.
settings.register_profile("rxreact", deadline=None)
settings.load_profile("rxreact")

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "streams"
"""The recorded provider streams, kept in the repository (a plain clone runs every test)."""


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests may only reach loopback addresses: anything else fails loudly."""
    real_connect = socket.socket.connect

    def guarded_connect(self: socket.socket, address: object) -> object:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and not (
            host in ("localhost", "::1") or host.startswith("127.") or self.family == socket.AF_UNIX
        ):
            raise RuntimeError(f"test tried to reach non-loopback address {address!r}")
        return real_connect(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)


@pytest.fixture(params=["thread", "loop"])
def io_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run the test once per I/O mode of ``OpenAIChatModel`` (models that choose none)."""
    mode: str = request.param
    monkeypatch.setenv("RXREACT_IO", mode)
    return mode


@pytest.fixture
def serve_model() -> Iterator[Callable[..., tuple[MockOpenAIServer, OpenAIChatModel]]]:
    """Start a loopback mock server playing ``script`` and a model on it (no retries): call it
    as ``server, model = serve_model(script, **model_kwargs)``; both are closed after the test."""
    made: list[tuple[MockOpenAIServer, OpenAIChatModel]] = []

    def start(script: Script, **kwargs: Any) -> tuple[MockOpenAIServer, OpenAIChatModel]:
        server = MockOpenAIServer(script).start()
        kwargs.setdefault("max_retries", 0)
        model = OpenAIChatModel("mock", base_url=server.base_url, **kwargs)
        made.append((server, model))
        return server, model

    yield start
    for server, model in made:
        model.close()
        server.stop()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A real redis-server on a loopback port, one per test module (skips, or fails with
    ``RXREACT_REQUIRE_REDIS=1``, where there is none)."""
    with running_redis_server() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_server() -> PostgresServer:
    """A real PostgreSQL server (and PgBouncer in transaction mode before it) on loopback
    ports, one per test session (skips, or fails with ``RXREACT_REQUIRE_POSTGRES=1``, where
    there is none); each test takes table names of its own with ``new_prefix()``."""
    return shared_postgres_server()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[LocalCluster]:
    """A real three-master Redis Cluster on loopback ports, one per test session (skips, or
    fails with ``RXREACT_REQUIRE_REDIS=1``, where redis-server or redis-cli is missing)."""
    with running_redis_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="session")
def redis_cluster_client(redis_cluster: LocalCluster) -> Iterator[Any]:
    """One ``redis.cluster.RedisCluster`` client for the session: making one reads the whole
    command table from a node, a noticeable cost per test."""
    client: Any = redis_cluster.client()
    yield client
    close_redis(client)  # RedisCluster.close leaves the nodes' sockets open


SLOW_FIRST = (
    "test_takeover.py",
    "test_lease_processes.py",
    "test_parking.py",
    "test_event_log_conformance.py",
    "test_benchmarks_smoke.py",
    "test_notebooks.py",
    "test_serve_page_parked.py",
    "test_typing.py",
    "test_cli_terminal.py",
    "test_mcp.py",
    "test_serve_page_cards.py",
    "test_serve_workers.py",
    "test_serve_ag_ui.py",
    "test_takeover_soak.py",
    "test_serve_auth.py",
    "test_serve_page.py",
    "test_serve_browser.py",
    "test_soak_smoke.py",
    "test_decisions.py",
    "test_serve_page_nesting.py",
    "test_serve_deadline.py",
    "test_runs_redis.py",
)
"""The files that take longest (from ``--junitxml`` times of the whole suite), run first.
``make test``'s workers take a file at a time in collection order
(``--no-loadscope-reorder``): a long file taken last is a tail one worker runs alone while the
others idle. A file not named here goes after these, in the usual order."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files stay whole
