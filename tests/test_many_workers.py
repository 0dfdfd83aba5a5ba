"""The many-workers benchmark (``python -m benchmarks.many_workers``) still works: tiny, on
SQLite, with its SIGKILL. Correctness only: nothing here asserts a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks._harness import expected_words, mock_server
from benchmarks.many_workers import run_backend

pytestmark = pytest.mark.integration

RUNS = 6
CHUNKS = 10

SEQ_REUSE = (
    "known bug: after a takeover the new owner numbers its events from the last committed seq, "
    "so a follower that saw uncommitted events live and resumes with Last-Event-ID misses the "
    "new ones up to its seq, round_restarted included, and keeps the lost round's text"
)


def _kept_a_lost_rounds_text(text: str) -> bool:
    """``w0 .. wk`` of the round the worker was killed in, then the whole answer again."""
    words, answer = text.split(), expected_words(CHUNKS)
    extra = len(words) - len(answer)
    return extra > 0 and words[extra:] == answer and words[:extra] == answer[:extra]


def test_a_killed_worker_s_runs_finish_once_through_the_other(tmp_path: Path) -> None:
    # Two `rxreact serve` processes on one SQLite file, six runs at once; the first worker is
    # SIGKILLed when the first answer begins, so its runs are mid-answer and are taken over.
    env = {"MOCK_CHUNKS": str(CHUNKS), "MOCK_DELAY_MS": "40"}
    with mock_server(env=env) as url:
        result = run_backend(
            "sqlite", url, tmp_path, runs=RUNS, concurrency=RUNS, workers=2, chunks=CHUNKS,
            lost_after=2.0, passes=("kill",), kill_after=0.0,
        )  # fmt: skip
    assert "failed" not in result, result.get("failed")
    kill = result["kill"]
    assert kill["finals"] == {1: RUNS}, kill["wrong"]  # every final answer seen, once
    assert kill["calls_run_twice"] == 0, kill["twice_examples"]
    assert kill["histories_not_once"] == 0, kill["history_examples"]
    assert kill["broken_runs"] >= 1  # the kill met runs in flight
    assert 0 < kill["tool_executions"] <= kill["calls_expected"]
    if kill["correct_once"] < RUNS and all(map(_kept_a_lost_rounds_text, kill["wrong_texts"])):
        pytest.xfail(SEQ_REUSE)
    assert kill["correct_once"] == RUNS, kill["wrong"]
