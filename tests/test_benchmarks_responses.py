"""The Responses benchmark works: every stack runs the conversation once, tiny, against its
loopback mock. Correctness only: nothing here asserts a time."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from benchmarks.responses import STACKS, make_session, responses_mock

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with responses_mock() as base_url:
        yield base_url


@pytest.mark.parametrize("stack", STACKS)
def test_each_stack_runs_the_conversation(url: str, stack: str) -> None:
    if stack == "sdk" and importlib.util.find_spec("openai") is None:
        pytest.skip("the openai SDK (the bench extra) is not installed")
    session, close = make_session(stack, url, 10)
    try:
        ttft = session()  # each session checks the answer it assembled
    finally:
        close()
    assert ttft > 0
