"""Circuit breakers: a model that keeps failing is skipped for a while, then probed once.

One :class:`CircuitBreaker` is a policy (how many failures in how long open it, how long it
stays open) and the table of its per-model states; every :class:`~rxreact.FallbackModel` built
with the same breaker object (by default the one shared :data:`DEFAULT_BREAKER`) shares that
table, so every run of the process sees a model's failures::

    state:     closed --(failures within window)--> open --(cooldown)--> half_open
    half_open: one request (the probe) is let through; others skip the model
               probe succeeds --> closed          probe fails --> open (another cooldown)

A failure is what makes a fallback model move on (a retryable error after the model's own
retries, a timeout, a cut stream, an error event); a request the provider refuses as bad (400,
401) says nothing of the model's health and is not counted. Time is read from ``clock``
(``time.monotonic`` by default), so a test moves it by hand.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Literal

from rxreact.errors import InvalidArgumentError

__all__ = ["DEFAULT_BREAKER", "BreakerState", "CircuitBreaker", "ModelBreaker"]

BreakerState = Literal["closed", "open", "half_open"]
"""``closed``: requests go through; ``open``: the model is skipped; ``half_open``: the
cooldown is over and one probe request decides."""


class ModelBreaker:
    """One model's breaker (``fallback.breakers[i]``); thread-safe."""

    def __init__(self, policy: CircuitBreaker, key: str) -> None:
        self.key = key
        """The model it guards (its label and endpoint)."""
        self._policy = policy
        self._lock = threading.Lock()
        self._failures: deque[float] = deque()
        self._opened_at: float | None = None
        self._probing = False

    def __repr__(self) -> str:
        return f"ModelBreaker({self.key!r}, state={self.state!r})"

    @property
    def state(self) -> BreakerState:
        """``"closed"``, ``"open"`` or ``"half_open"``, now."""
        with self._lock:
            return self._state()

    def _state(self) -> BreakerState:
        if self._opened_at is None:
            return "closed"
        if self._policy.clock() - self._opened_at < self._policy.cooldown:
            return "open"
        return "half_open"

    def acquire(self) -> tuple[bool, BreakerState]:
        """May a request go to the model now? With the state it was decided in. In
        ``half_open`` only the first caller gets ``True`` (it is the probe) until the probe
        has been decided by :meth:`succeeded` or :meth:`failed`."""
        with self._lock:
            state = self._state()
            if state == "closed":
                return True, state
            if state == "half_open" and not self._probing:
                self._probing = True
                return True, state
            return False, state

    def succeeded(self) -> None:
        """A request to the model ended well: the breaker closes (its failures forgotten)."""
        with self._lock:
            self._failures.clear()
            self._opened_at = None
            self._probing = False

    def failed(self) -> None:
        """A request to the model failed: counted; the breaker opens at ``failures`` within
        ``window`` seconds, or at once when the request was the half-open probe."""
        policy = self._policy
        with self._lock:
            now = policy.clock()
            if self._opened_at is not None:  # the probe (or a request let in before opening)
                self._opened_at = now
                self._probing = False
                return
            failures = self._failures
            failures.append(now)
            while failures and now - failures[0] > policy.window:
                failures.popleft()
            if len(failures) >= policy.failures:
                failures.clear()
                self._opened_at = now

    def released(self) -> None:
        """A request let through ended undecided (disposed, or refused as a bad request):
        a half-open breaker lets the next request probe instead."""
        with self._lock:
            self._probing = False


class CircuitBreaker:
    """The breaker policy of a :class:`~rxreact.FallbackModel`, and its per-model states.

    Args:
        failures: failures within ``window`` seconds that open a model's breaker.
        window: the seconds failures are counted over.
        cooldown: seconds an open breaker skips its model before one probe request decides.
        clock: seconds now, monotonic (``time.monotonic``; a test passes its own).
    """

    def __init__(
        self,
        failures: int = 5,
        window: float = 60,
        cooldown: float = 30,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if isinstance(failures, bool) or not isinstance(failures, int) or failures < 1:
            raise InvalidArgumentError(f"failures must be a positive int, got {failures!r}")
        for name, value in (("window", window), ("cooldown", cooldown)):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise InvalidArgumentError(f"{name} must be positive seconds, got {value!r}")
        self.failures = failures
        self.window: float = float(window)
        self.cooldown: float = float(cooldown)
        self.clock = clock
        self._lock = threading.Lock()
        self._models: dict[str, ModelBreaker] = {}

    def __repr__(self) -> str:
        return (
            f"CircuitBreaker(failures={self.failures}, window={self.window:g}, "
            f"cooldown={self.cooldown:g})"
        )

    def for_model(self, key: str) -> ModelBreaker:
        """The breaker of the model ``key`` names (made on first use, then shared)."""
        with self._lock:
            breaker = self._models.get(key)
            if breaker is None:
                breaker = self._models[key] = ModelBreaker(self, key)
            return breaker


DEFAULT_BREAKER = CircuitBreaker()
"""The breaker every :class:`~rxreact.FallbackModel` uses unless given another (or ``None``):
one table for the process, so all runs see a model's failures."""
