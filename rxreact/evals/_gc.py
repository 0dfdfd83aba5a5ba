"""Keeping finished runs out of the garbage collector's way while an evaluation goes on.

An evaluation keeps every run it finished (events, results) until it returns the report:
hundreds of thousands of objects that the collector would walk again at every full
collection, which made a virtual-time evaluation of 1,000 runs take half as long again as
the runs themselves. Every ``every`` finished runs, young garbage is collected and what
survives is frozen (``gc.freeze``: left out of collections); the end of the evaluation
unfreezes it. Only when nothing else froze objects before (a pre-fork server might have):
unfreezing is all or nothing, and theirs must stay frozen.
"""

from __future__ import annotations

import gc
from types import TracebackType

__all__ = ["FinishedRuns"]


class FinishedRuns:
    """``with FinishedRuns() as kept: ... kept.add()`` per finished run."""

    def __init__(self, every: int = 64, *, enabled: bool = True) -> None:
        self.every = every
        self.enabled = enabled
        self._count = 0
        self._active = False

    def __enter__(self) -> FinishedRuns:
        self._active = self.enabled and gc.isenabled() and gc.get_freeze_count() == 0
        return self

    def add(self) -> None:
        """One more run kept."""
        if not self._active:
            return
        self._count += 1
        if self._count % self.every == 0:
            gc.collect(1)  # the young cycles a run leaves (subscriptions): not to be frozen
            gc.freeze()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._active and self._count >= self.every:
            gc.unfreeze()
        self._active = False
