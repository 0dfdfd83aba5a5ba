"""Backoff and retry_delay: when a failed model request is tried again, and after how long."""

from __future__ import annotations

from typing import Any

import pytest

from rxreact.errors import (
    BadRequestError,
    ModelConnectionError,
    ModelTimeoutError,
    ProviderStreamError,
    RateLimitError,
    ServerError,
    StreamInterruptedError,
)
from rxreact.model.retry_policy import Backoff, retry_delay


def test_exponential_and_capped() -> None:
    backoff = Backoff(base=0.5, factor=2, cap=3)

    assert [backoff.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_jitter_is_bounded_and_seedable() -> None:
    waits = [Backoff(base=1, jitter=0.25, seed=7).delay(0) for _ in range(2)]
    spread = Backoff(base=1, jitter=0.25, seed=8)

    assert waits[0] == waits[1]
    assert all(0.75 <= spread.delay(0) <= 1.25 for _ in range(100))


@pytest.mark.parametrize("bad", [{"base": -1}, {"factor": 0.5}, {"jitter": 2}])
def test_invalid_backoff(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="invalid backoff"):
        Backoff(**bad)


@pytest.mark.parametrize(
    "error",
    [
        RateLimitError(429, "slow"),
        ServerError(503, "down"),
        ModelConnectionError("refused"),
        StreamInterruptedError("cut"),
    ],
)
def test_retryable_errors_are_retried_until_the_budget_is_spent(error: Exception) -> None:
    backoff = Backoff(base=0.1)

    assert retry_delay(error, 0, 2, backoff) == 0.1
    assert retry_delay(error, 1, 2, backoff) == 0.2
    assert retry_delay(error, 2, 2, backoff) is None


@pytest.mark.parametrize(
    "error",
    [
        BadRequestError(400, "no"),
        ProviderStreamError("overloaded"),
        ModelTimeoutError("first_chunk", 1),
        RuntimeError("bug"),
    ],
)
def test_other_errors_are_not_retried(error: Exception) -> None:
    assert retry_delay(error, 0, 2, Backoff()) is None


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    backoff = Backoff(base=0.5, cap=8)

    assert retry_delay(RateLimitError(429, "x", retry_after=3), 0, 2, backoff) == 3
    assert retry_delay(RateLimitError(429, "x", retry_after=0.1), 0, 2, backoff) == 0.5
    assert retry_delay(RateLimitError(429, "x", retry_after=9), 0, 2, backoff) is None


def test_retry_after_on_a_503_is_honoured_too() -> None:
    backoff = Backoff(base=0.5, cap=8)

    assert retry_delay(ServerError(503, "busy", retry_after=2), 0, 2, backoff) == 2
    assert retry_delay(ServerError(503, "busy", retry_after=9), 0, 2, backoff) is None


def test_max_retry_wait_chooses_how_long_a_retry_after_is_waited_for() -> None:
    patient = Backoff(cap=8, max_retry_wait=60)
    hasty = Backoff(cap=8, max_retry_wait=1)

    assert retry_delay(RateLimitError(429, "x", retry_after=30), 0, 2, patient) == 30
    assert retry_delay(ServerError(503, "x", retry_after=30), 0, 2, patient) == 30
    assert retry_delay(RateLimitError(429, "x", retry_after=2), 0, 2, hasty) is None
    assert retry_delay(ServerError(503, "x", retry_after=0.5), 0, 2, hasty) == 0.5
    with pytest.raises(ValueError, match="invalid backoff"):
        Backoff(max_retry_wait=-1)
