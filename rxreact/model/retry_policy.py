"""When to try a model request again, and how long to wait first.

A failed attempt is retried when its error says it may go away (``error.retryable``: 429,
5xx, connection errors, a cut stream), nothing of that response reached the subscriber yet,
and retries are left. The wait grows exponentially, ``base * factor ** n`` capped at ``cap``,
optionally jittered. A provider's ``Retry-After`` (on a 429 or a 5xx) is honoured when it is
longer, up to ``Backoff.max_retry_wait`` (by default the cap, 8 s). A ``Retry-After`` longer
than that is not waited for, by choice: a run should not sit silent for minutes on a
provider's word. The error (:class:`~rxreact.errors.RateLimitError` or
:class:`~rxreact.errors.ServerError`) then goes to the subscriber at once, carrying
``retry_after`` so the caller can decide. Raise ``max_retry_wait`` to wait longer instead.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from rxreact.errors import ModelError, ModelHTTPError

__all__ = ["Backoff", "retry_delay"]


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff between attempts.

    Args:
        base: seconds before the first retry.
        factor: multiplier for each later retry.
        cap: the longest wait, in seconds (also the longest ``Retry-After`` honoured).
        jitter: spread each wait uniformly over ``±jitter`` of itself (``0.1`` = ±10 %), so
            that many clients rate-limited together do not retry together; ``0`` = none.
        seed: seed of the jitter's random generator, for reproducible waits.
        max_retry_wait: the longest provider ``Retry-After`` waited for, in seconds; a longer
            one fails at once with the error carrying ``retry_after``. ``None``: ``cap``.
    """

    base: float = 0.5
    factor: float = 2.0
    cap: float = 8.0
    jitter: float = 0.0
    seed: int | None = None
    max_retry_wait: float | None = None
    _random: random.Random = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (
            self.base < 0
            or self.factor < 1
            or self.cap < 0
            or not 0 <= self.jitter <= 1
            or (self.max_retry_wait is not None and self.max_retry_wait < 0)
        ):
            raise ValueError(f"invalid backoff {self!r}")
        object.__setattr__(self, "_random", random.Random(self.seed))

    @property
    def longest_retry_after(self) -> float:
        """The longest ``Retry-After`` waited for: ``max_retry_wait``, else ``cap``."""
        return self.cap if self.max_retry_wait is None else self.max_retry_wait

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first), jitter included."""
        wait = min(self.cap, self.base * self.factor**retry)
        if self.jitter:
            wait *= 1 + self._random.uniform(-self.jitter, self.jitter)
        return max(0.0, min(self.cap, wait))


def retry_delay(error: Exception, retry: int, max_retries: int, backoff: Backoff) -> float | None:
    """Seconds to wait before retrying after ``error``, or ``None`` to give up.

    Args:
        error: what the attempt failed with.
        retry: how many retries were made already.
        max_retries: how many retries are allowed in all.
        backoff: the wait policy.
    """
    if not isinstance(error, ModelError) or not error.retryable or retry >= max_retries:
        return None
    wait = backoff.delay(retry)
    asked = error.retry_after if isinstance(error, ModelHTTPError) else None
    if asked is not None:
        if asked > backoff.longest_retry_after:
            return None
        wait = max(wait, asked)
    return wait
