"""Marble requests of running runs wait on a future, not a thread: forty diagrams waiting
for their runs to end (more than the loop's default executor has threads) do not delay
another user's diagram of a finished run."""

from __future__ import annotations

import asyncio

import pytest

from rxreact import ReactAgent, RunCancelledError
from rxreact.messages import ChatRequest, content_text
from rxreact.model.scripted.model import ScriptedModel
from rxreact.model.scripted.replies import Hang, Reply, text_reply
from rxreact.serve._runs import RunRegistry

WAITING = 40  # the default executor has min(32, cpus + 4) threads


def script(request: ChatRequest) -> Reply:
    if content_text(request.messages[-1].content) == "Draw it.":
        return text_reply("Drawn.")
    return [*text_reply("Working on it")[:2], Hang()]  # silent until the run is cancelled


def test_waiting_diagrams_do_not_delay_a_finished_runs_diagram() -> None:
    registry = RunRegistry(ReactAgent(ScriptedModel(script)))
    finished = registry.start("Draw it.", None, user="someone")
    assert finished.result(timeout=10).answer == "Drawn."
    running = [registry.start(f"Work {i}.", None, user=f"user{i}") for i in range(WAITING)]

    async def main() -> None:
        waiting = [asyncio.create_task(registry.recording(run.id, 30)) for run in running]
        await asyncio.sleep(0)  # each task reaches its wait
        drawn = await asyncio.wait_for(registry.recording(finished.id, 30), 5)
        assert drawn is not None and drawn.values
        assert not any(task.done() for task in waiting)  # still waiting for their runs
        for run in running:
            run.cancel()
        recordings = await asyncio.wait_for(asyncio.gather(*waiting), 10)
        # Each ended and was recorded (on a busy machine a run may be cancelled before its
        # first event: its recording is then empty, but it is there).
        assert all(r is not None for r in recordings)

    try:
        asyncio.run(main())
    finally:
        for run in running:
            run.cancel()
    for run in running:
        with pytest.raises(RunCancelledError):
            run.result(timeout=10)
