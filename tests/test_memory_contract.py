"""The ChatMemory contract (:mod:`rxreact.testing.conformance`), once for every backend:
in-memory, SQLite (a file), Redis (real; one node and a three-master cluster), Postgres
(real, direct and through PgBouncer).

A new backend is one more entry in ``BACKENDS`` and one branch in ``make_memory``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from postgres_server import PostgresServer
from redis_server import RedisServer

from rxreact.memory import InMemoryChatMemory, RedisChatMemory, SQLiteChatMemory
from rxreact.memory.postgres import PostgresChatMemory
from rxreact.testing.conformance import ChatMemoryConformance
from rxreact.testing.conformance._memory import MakeMemory, acquire_eventually, turn

__all__ = ["MakeMemory", "acquire_eventually", "make_memory", "turn"]  # shared with other tests

BACKENDS = ("in_memory", "sqlite", "redis", "redis_cluster", "postgres", "postgres_bouncer")


@pytest.fixture(params=BACKENDS)
def make_memory(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[MakeMemory]:
    """A factory of fresh, empty memories of one backend: ``make_memory(max_turns=...)``."""
    made: list[Any] = []
    backend = request.param
    if backend == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        import redis

        with redis.Redis.from_url(server.url) as client:
            client.flushdb()
    if backend == "redis_cluster":  # a three-master cluster, one client for the session
        request.getfixturevalue("redis_cluster").flush()
        cluster_client = request.getfixturevalue("redis_cluster_client")
    if backend.startswith("postgres"):
        pg: PostgresServer = request.getfixturevalue("postgres_server")
        dsn = pg.dsn(bouncer=backend == "postgres_bouncer")

    def make(**kw: Any) -> Any:
        memory: Any
        if backend == "in_memory":
            memory = InMemoryChatMemory(**kw)
        elif backend == "sqlite":
            memory = SQLiteChatMemory(tmp_path / f"memory{len(made)}.db", **kw)
        elif backend == "redis_cluster":
            memory = RedisChatMemory(cluster_client, prefix=f"test{len(made)}:", **kw)
        elif backend.startswith("postgres"):
            memory = PostgresChatMemory(
                dsn, table_prefix=pg.new_prefix(), min_size=1, max_size=8, **kw
            )
        else:
            memory = RedisChatMemory(server.url, prefix=f"test{len(made)}:", **kw)
        made.append(memory)
        return memory

    yield make
    for memory in made:
        if hasattr(memory, "close"):
            memory.close()


class TestChatMemoryContract(ChatMemoryConformance):
    """Every test of the suite, on each backend of ``BACKENDS``."""
