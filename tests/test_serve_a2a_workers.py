"""A2A across two ``rxreact serve`` processes with users, on one real redis-server: a task
streamed from one is resubscribed (after its stream dropped) and read through the other, and a
task one runs is cancelled through the other, all with the official ``a2a-sdk`` client."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from redis_server import running_redis_server
from serve_helpers import Gate
from test_serve_a2a import ALICE, answer_of, ask, connected, fold, seq_of
from test_serve_workers import rxreact_serve

from rxreact.model.scripted.replies import Hang, text_reply
from rxreact.testing import MockOpenAIServer

pytest.importorskip("a2a")

from a2a.client import ClientCallContext
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)

ANSWER = "Started on one worker and finished on the other."


def test_a_task_is_resumed_read_and_cancelled_through_another_worker(tmp_path: Path) -> None:
    gate = Gate()
    reply = text_reply(ANSWER)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{ALICE} alice\n")
    tokens.chmod(0o600)
    with (
        running_redis_server() as redis,
        MockOpenAIServer(
            [gate.reply(reply[:4], reply[4:]), [*text_reply("Going on and on")[:2], Hang()]]
        ) as mock,
    ):
        env = {**os.environ, "OPENAI_BASE_URL": mock.base_url, "OPENAI_API_KEY": "sk-test",
               "RXREACT_MODEL": "mock"}  # fmt: skip
        options = ("--redis", redis.url, "--token-file", str(tokens))
        try:
            with (
                rxreact_serve(env, *options, "--workers", "2") as first,
                rxreact_serve(env, *options) as second,
            ):
                seen, rest, got = asyncio.run(resume(first, second, gate))
                cancelled, ending = asyncio.run(cancel(first, second))
                assert mock.wait_for_disconnects(1, timeout=10)  # its model stream was closed
        finally:
            Gate.open_all()
    # the resubscription through the other worker goes on from the last update seen
    assert answer_of(rest[0].task) == answer_of(fold(seen))
    assert all(seq_of(r) > seq_of(seen[-1]) for r in rest[1:])
    assert answer_of(fold(rest)) == ANSWER
    assert got.status.state == TaskState.TASK_STATE_COMPLETED and answer_of(got) == ANSWER
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert ending[-1].status_update.status.state == TaskState.TASK_STATE_CANCELED


async def resume(
    first: str, second: str, gate: Gate
) -> tuple[list[StreamResponse], list[StreamResponse], Task]:
    seen: list[StreamResponse] = []
    rest: list[StreamResponse] = []
    async with connected(first) as one:
        stream = one.send_message(ask("Go", "shared"))
        async for response in stream:
            seen.append(response)
            if response.HasField("artifact_update"):
                break
        await stream.aclose()  # the stream drops; the task goes on in the first worker
    request = SubscribeToTaskRequest(id=seen[0].task.id)
    after = ClientCallContext(service_parameters={"Last-Event-ID": str(seq_of(seen[-1]))})
    async with connected(second) as other:
        async for response in other.subscribe(request, context=after):
            rest.append(response)
            if len(rest) == 1:
                gate.open()
        got = await other.get_task(GetTaskRequest(id=request.id))
    return seen, rest, got


async def cancel(first: str, second: str) -> tuple[Task, list[StreamResponse]]:
    seen: list[StreamResponse] = []
    cancelled = Task()
    async with connected(first) as one, connected(second) as other:
        async for response in one.send_message(ask("Go", "other")):
            seen.append(response)
            if response.HasField("artifact_update") and not cancelled.id:
                cancelled = await other.cancel_task(CancelTaskRequest(id=seen[0].task.id))
    return cancelled, seen
