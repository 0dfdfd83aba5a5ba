"""The Gemini benchmark works: every stack runs the bench conversation against its mock.

Correctness only: nothing here asserts a time (the benchmark itself is the check).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks._gemini_stacks import make_session
from benchmarks._harness import run_child
from benchmarks.gemini_adapter import available, gemini_mock

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with gemini_mock() as base_url:
        yield base_url


@pytest.mark.parametrize("stack", available())
def test_each_stack_runs_the_conversation(url: str, stack: str) -> None:
    session, close = make_session(stack, url, 20)
    try:
        result = session()  # checks the answer's words and that both tools ran
    finally:
        close()
    assert result["deltas"] == 20
    assert result["cpu_s"] > 0


def test_the_child_prints_medians(url: str) -> None:
    result = run_child("gemini_adapter", ["rxreact", url, "10", "1"])
    assert (result["stack"], result["deltas"]) == ("rxreact", 10)
