"""A cancellation token that tools may check to stop early when their run is disposed."""

from __future__ import annotations

import threading

__all__ = ["CancellationToken"]


class CancellationToken:
    """Set once, when the run (or the tool call) is disposed or timed out.

    A tool declares a parameter annotated ``CancellationToken`` to receive one; the parameter is
    not part of the tool's JSON schema. Sync tools can poll :attr:`cancelled` or block on
    :meth:`wait`; whatever a cancelled tool returns afterwards is ignored.
    """

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = threading.Event()

    @property
    def cancelled(self) -> bool:
        """True once cancellation was requested."""
        return self._event.is_set()

    def cancel(self) -> None:
        """Request cancellation (idempotent, thread-safe)."""
        self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled or ``timeout`` elapses; returns :attr:`cancelled`.

        Use this instead of ``time.sleep`` inside a sync tool so that disposal wakes it.
        """
        return self._event.wait(timeout)

    def __repr__(self) -> str:
        return f"CancellationToken(cancelled={self.cancelled})"
