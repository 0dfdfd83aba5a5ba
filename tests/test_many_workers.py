"""The many-workers benchmark (``python -m benchmarks.many_workers``) still works: tiny, on
SQLite, with its SIGKILL. Correctness only: nothing here asserts a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks._harness import mock_server
from benchmarks.many_workers import run_backend

pytestmark = pytest.mark.integration

RUNS = 6
CHUNKS = 10


def test_a_killed_worker_s_runs_finish_once_through_the_other(tmp_path: Path) -> None:
    # Two `rxreact serve` processes on one SQLite file, six runs at once; the first worker is
    # SIGKILLed when the first answer begins, so its runs are mid-answer and are taken over.
    env = {"MOCK_CHUNKS": str(CHUNKS), "MOCK_DELAY_MS": "40"}
    with mock_server(env=env) as url:
        result = run_backend(
            "sqlite", url, tmp_path, runs=RUNS, concurrency=RUNS, workers=2, chunks=CHUNKS,
            lost_after=1.0, passes=("kill",), kill_after=0.0,
        )  # fmt: skip
    assert "failed" not in result, result.get("failed")
    kill = result["kill"]
    assert kill["correct_once"] == RUNS, kill["wrong"]
    assert kill["finals"] == {1: RUNS}
    assert kill["calls_run_twice"] == 0, kill["twice_examples"]
    assert kill["histories_not_once"] == 0, kill["history_examples"]
    assert kill["broken_runs"] >= 1  # the kill met runs in flight
    assert 0 < kill["tool_executions"] <= kill["calls_expected"]
