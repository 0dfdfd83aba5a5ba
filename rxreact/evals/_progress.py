"""The progress bar of an evaluation: on stderr when it is a terminal, nothing otherwise.

::

    [██████████░░░░░░░░░░]  52/100  ✓ 47  ✗ 5  ETA 12s
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress"]

_WIDTH = 20
_EVERY = 0.1  # seconds between redraws: a fast virtual-time evaluation must not pay per run


class Progress:
    """Counts finished runs and redraws the bar (at most every 0.1 s, and at the end).

    Args:
        total: the runs to come.
        enabled: draw at all (``progress=``); only when ``stream`` is a terminal.
        stream: where to draw (default: ``sys.stderr``).
    """

    def __init__(self, total: int, enabled: bool, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and _is_tty(self.stream)
        self.done = self.passed = self.failed = 0
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._drawn = 0.0

    def add(self, passed: bool) -> None:
        """One more run finished."""
        if not self.enabled:
            return
        with self._lock:
            self.done += 1
            self.passed += passed
            self.failed += not passed
            now = time.monotonic()
            if now - self._drawn >= _EVERY or self.done == self.total:
                self._drawn = now
                self._draw(now)

    def close(self) -> None:
        """End the bar's line."""
        if self.enabled and self.done:
            with self._lock:
                self._draw(time.monotonic())
                self.stream.write("\n")
                self.stream.flush()

    def _draw(self, now: float) -> None:
        share = self.done / self.total if self.total else 1.0
        filled = round(share * _WIDTH)
        bar = "█" * filled + "░" * (_WIDTH - filled)
        elapsed = now - self._start
        left = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        eta = f"ETA {left:.0f}s" if self.done < self.total else f"{elapsed:.1f}s"
        self.stream.write(
            f"\r[{bar}] {self.done:>{len(str(self.total))}}/{self.total}  "
            f"✓ {self.passed}  ✗ {self.failed}  {eta} "
        )
        self.stream.flush()


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a real file
        return False
