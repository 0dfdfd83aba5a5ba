"""The benchmark scripts work: every workload once, tiny, against the loopback mock.

Correctness only: nothing here asserts a time (the benchmark itself is the check).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import (
    conversations,
    peers,
    queued_run,
    scale,
    serve_path,
    slow_subscriber,
    workers,
)
from benchmarks.__main__ import _selected
from benchmarks._harness import BenchError, Table, check_answer, mock_server, run_child
from benchmarks._stacks import STACKS, make_session

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with mock_server() as base_url:
        yield base_url


@pytest.mark.parametrize("stack", STACKS)
def test_each_stack_runs_the_conversation(url: str, stack: str) -> None:
    session, close = make_session(stack, url, 20)
    try:
        result = session()
    finally:
        close()
    assert result["deltas"] == (0 if stack == "httpx_sync_read" else 20)
    assert result["cpu_s"] > 0


@pytest.mark.parametrize("async_tool", [False, True])
def test_rxreact_runs_k_tools_each_once(url: str, async_tool: bool) -> None:
    session, close = make_session(
        "rxreact", url, 5, tool_calls=4, tool_sleep_s=0.01, async_tool=async_tool
    )
    try:
        result = session()  # the session checks that exactly 4 tool calls ran
    finally:
        close()
    assert result["tool_span_s"] > 0


def test_sessions_child_prints_medians(url: str) -> None:
    result = run_child("_sessions", ["rxreact", url, "10", "1"])
    assert result["stack"] == "rxreact"
    assert result["deltas"] == 10


@pytest.mark.parametrize("stack", [s for s in scale.STACKS if s not in scale.PEER_STACKS])
def test_scale_runs_complete_with_the_right_text(url: str, stack: str) -> None:
    result = scale.measure(stack)(url, 5, 5, 1.0, 30.0)
    assert result["finished"]
    assert result["correct"] == 5
    assert result["errors"] == 0
    assert result["peak_threads"] >= 1


def test_scale_peer_stacks_run_only_where_their_module_imports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # This test's Python stands in for the peers' venv: a module it has, and one it lacks.
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    monkeypatch.setenv("PEERS_VENV", str(tmp_path))
    assert scale._peers_python("json") == str(tmp_path / "bin" / "python")
    assert scale._peers_python("rxreact_no_such_module") is None
    monkeypatch.setenv("PEERS_VENV", str(tmp_path / "no-such-venv"))
    assert scale._peers_python("json") is None


def test_scale_runs_started_over_a_ramp_complete(url: str) -> None:
    result = scale.measure("rxreact_loop")(url, 4, 3, 1.0, 30.0, 0.05)
    assert (result["finished"], result["correct"], result["errors"]) == (True, 4, 0)


def test_conversations_table_has_a_row_per_stack(url: str) -> None:
    table = conversations.measure(url, runs=3, chunks=2, delay_ms=1.0, ramp_s=0.01, deadline_s=30.0)
    assert [row[0] for row in table.rows] == list(conversations.STACKS)
    assert all(row[1] == "3/3" for row in table.rows)


def test_workers_table_has_every_mode_and_both_worker_counts(url: str) -> None:
    table = workers.run(url, quick=True, runs=2, chunks=3)
    if table.rows[0][0].startswith("not run"):
        pytest.skip("no redis-server")
    assert [(row[0], row[1]) for row in table.rows] == [
        ("1", "none"),
        ("1", "memory"),
        ("1", "log"),
        ("2", "memory"),
    ]
    assert [row[2] for row in table.rows] == ["2/2", "2/2", "2/2", "4/4"]


def test_slow_subscriber_child(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    slow_subscriber.child([url, "300", "50", "16"])
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["buffer_size"] == 16
    assert result["peak_rss_mb"] >= result["base_rss_mb"] > 0


def test_wrong_answer_fails_loudly() -> None:
    check_answer("w0 w1 w2", 3)
    with pytest.raises(BenchError):
        check_answer("w0 w2 w1", 3)


def test_peers_without_venv_print_the_reference_table() -> None:
    table = peers.run(quick=True, rxreact_ratio=1.0, peers=[])
    text = table.render()
    assert "REFERENCE" in text
    assert "langgraph" in text


def test_table_renders_markdown() -> None:
    table = Table("t", ["a", "b"])
    table.add("x", float("nan"))
    table.add("y", 1234.5)
    assert table.render().splitlines()[2:6] == [
        "| a | b    |",
        "|---|------|",
        "| x | n/a  |",
        "| y | 1234 |",
    ]


def test_workload_selection() -> None:
    assert _selected("1,scale") == ["per_chunk", "scale"]
    with pytest.raises(SystemExit):
        _selected("nope")


@pytest.mark.parametrize("variant", ["cold", "memory_100"])
def test_runs_workload_checks_every_subscriber(url: str, variant: str) -> None:
    result = run_child("runs", [variant, url, "10", "1"])
    assert result["variant"] == variant
    assert result["cpu_s"] > 0


def test_queued_run_measures_each_case(url: str, tmp_path: Any) -> None:
    from rxreact import SQLiteChatMemory

    result = queued_run.measure(url, lambda: SQLiteChatMemory(tmp_path / "q.db"), 2, shared=True)
    assert result["cold_wall_s"] > 0 and result["uncontended_wall_s"] > 0
    assert result["handoff_same_s"] >= 0 and result["handoff_other_s"] >= 0


def test_the_serve_path_delivers_every_chunk_through_both_servers(url: str) -> None:
    table = serve_path.run(url, True, clients=3, chunks=5)
    results = table.data["results"]
    assert {kind: (r["complete"], r["received"]) for kind, r in results.items()} == {
        "relay": (3, 15),
        "rxreact": (3, 15),
    }


def test_chunk_calls_counts_the_calls_every_chunk_makes() -> None:
    from benchmarks.chunk_calls import per_chunk

    src = str(Path(__file__).resolve().parents[1])
    total, names = per_chunk(src, "memory", "")
    assert 5 < total < 30
    # One call per chunk at each layer of the chunk path, in the round and in the hot run.
    assert names["agent/round.py:process"] == pytest.approx(1.0, abs=0.05)
    assert names["runs/_record.py:append"] == pytest.approx(1.0, abs=0.05)


def test_the_output_partials_benchmark_runs() -> None:
    from benchmarks import output_partials

    with mock_server("benchmarks._typed_mock") as typed_url:
        cpu, chunks, partials = output_partials.session(typed_url, True, 1, paced=False)
    assert cpu > 0 and chunks > 2000 and partials >= 1
