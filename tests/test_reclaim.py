"""Tests of rxreact.model.http._reclaim: loop mode gives back the pool slots httpcore loses
when an attempt's task is cancelled (a loop-mode matter: thread mode cancels no task)."""

from __future__ import annotations

import random

import httpx
import pytest
from fault_server import Fault, FaultServer, ok
from test_faults_http import FAST, watch
from test_openai_model import REQUEST

from rxreact.model.openai.client import OpenAIChatModel, run_on_io_loop

pytestmark = pytest.mark.integration


def test_cancelled_attempts_give_their_pool_slots_back() -> None:
    # encode/httpcore#1093: a loop-mode attempt cancelled (timeout, dispose) just as the
    # async pool gave it a new connection left that connection in the pool for ever; with
    # enough of them every request ended in a pool timeout.
    async def small_pool() -> httpx.AsyncClient:
        return httpx.AsyncClient(limits=httpx.Limits(max_connections=2))

    client = run_on_io_loop(small_pool())
    chance = random.Random(7)
    faults = [ok("hello")] * 4 + [Fault("stall"), Fault("stall_body"), Fault("reset")]
    with FaultServer(lambda _, __: chance.choice(faults)) as server:
        model = OpenAIChatModel(
            "m",
            base_url=server.base_url,
            http_client=client,
            max_retries=1,
            backoff=FAST,
            first_chunk_timeout=0.05,
        )
        for _ in range(250):
            outcome, subscription = watch(model.stream(REQUEST))
            outcome.done.wait(chance.uniform(0, 0.03))
            subscription.dispose()
        pool = client._transport._pool
        assert server.wait_for(lambda _: not pool._requests, timeout=5)
        stuck = [c for c in pool.connections if not (c.is_idle() or c.is_closed())]
        assert stuck == []
    run_on_io_loop(client.aclose())
