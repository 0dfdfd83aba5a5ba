"""A run lost after its answer was recorded is finished, not answered twice.

The owner checkpoints the model's answer, commits the turn to memory, then emits
``final_answer`` and the end marker. Killed between those, the run is claimed by another
process. These tests put a finished run's file back into each of those states (the end marker
gone and the owner's beat old, as SIGKILL leaves them) and resume it here: the turn is in
memory once and followers see one ``final_answer`` (the many-workers benchmark found both
doubled on every backend).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from reactivex import operators as ops

from rxreact import (
    OpenAIChatModel,
    ReactAgent,
    SQLiteChatMemory,
    SQLiteEventLog,
    follow,
)
from rxreact.model.scripted.replies import text_reply
from rxreact.testing import MockOpenAIServer

pytestmark = pytest.mark.integration

ANSWER = "Paris is sunny."


@pytest.fixture
def answered(tmp_path: Path) -> Iterator[tuple[Path, Path, str, MockOpenAIServer]]:
    """A run that answered on a conversation, both files closed: (log, memory, run id,
    the model server)."""
    with MockOpenAIServer([text_reply(ANSWER)] * 2) as server:
        log_path, memory_path = tmp_path / "runs.db", tmp_path / "memory.db"
        with (
            SQLiteEventLog(log_path, lost_after=0.2) as log,
            SQLiteChatMemory(memory_path) as memory,
            OpenAIChatModel("m", base_url=server.base_url, api_key="k") as model,
        ):
            run = ReactAgent(model, memory=memory, event_log=log).start("Weather?", "c1")
            assert run.result(timeout=15).answer == ANSWER
            run_id = run.id
        yield log_path, memory_path, run_id, server


def lose(log_path: Path, run_id: str, *, keep_final_answer: bool) -> None:
    """Make the ended run look as a SIGKILL before its end (and maybe before its answer
    event) leaves it: no end marker, a beat long past, state running."""
    with sqlite3.connect(log_path) as db:
        db.execute("DELETE FROM entries WHERE run_id = ? AND kind = 'end'", (run_id,))
        if not keep_final_answer:
            seq, body = db.execute(
                "SELECT seq, body FROM entries WHERE run_id = ? ORDER BY seq DESC LIMIT 1",
                (run_id,),
            ).fetchone()
            events = json.loads(body)
            assert events[-1]["type"] == "final_answer"
            db.execute("DELETE FROM entries WHERE run_id = ? AND seq = ?", (run_id, seq))
            if events[:-1]:
                db.execute(
                    "INSERT INTO entries (run_id, seq, kind, body) VALUES (?, ?, 'e', ?)",
                    (run_id, seq - 1, json.dumps(events[:-1]).encode()),
                )
        db.execute(
            "UPDATE runs SET state = 'running', ended_at = NULL, beat = ? WHERE run_id = ?",
            (time.time() - 60, run_id),
        )


@pytest.mark.parametrize("keep_final_answer", [True, False], ids=["answer-logged", "committed"])
def test_a_run_lost_after_its_answer_is_finished_once(
    answered: tuple[Path, Path, str, MockOpenAIServer], keep_final_answer: bool
) -> None:
    log_path, memory_path, run_id, server = answered
    lose(log_path, run_id, keep_final_answer=keep_final_answer)
    with (
        SQLiteEventLog(log_path, lost_after=0.2) as log,
        SQLiteChatMemory(memory_path) as memory,
        OpenAIChatModel("m", base_url=server.base_url, api_key="k") as model,
    ):
        agent = ReactAgent(model, memory=memory, event_log=log)
        resumed = agent.resume_runs()
        assert [r.id for r in resumed] == [run_id]
        assert resumed[0].result(timeout=15).answer == ANSWER
        events = follow(run_id, log).pipe(ops.to_list()).run()
        history = memory.load("c1")
    assert [e.type for e in events].count("final_answer") == 1
    assert events[-1].type == "final_answer" and events[-1].text == ANSWER
    assert [(m.role, m.content) for m in history] == [("user", "Weather?"), ("assistant", ANSWER)]
    assert len(server.requests) == 1  # the recorded answer is not asked for again
