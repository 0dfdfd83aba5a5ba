"""Admission to the I/O loop: new requests wait, in order, while the loop runs late.

Loop mode reads every stream of the process on one event loop. Past what one core can carry
(ten thousand conversations at one chunk a second, say), the loop falls behind: each of its
passes has thousands of ready callbacks, under a GIL shared with the agent's threads. Streams
already running only get slower, but a request *starting* then needs several passes to
connect, and with each pass taking a second its connect timeout expires although the server
answered at once: in workload 9, 6,000 of 10,000 conversations failed so (three connect
timeouts in a row each), none of them for a fault of the server.

So the start of an attempt goes through :class:`Admission`. While the loop is on time, and
nobody waits, an attempt starts at once (one comparison). While it is late, new attempts
queue here, first come first served, with no timer running (the watchdog is armed after
admission, when the request is really sent); running streams, the work already accepted, go
on and the lateness comes down. Then the waiting attempts are let in a batch per probe, so a
backlog does not return as one burst. This is queueing, not shedding: every request is sent,
later. The run's own stall watchdog still bounds a wait (an overload that never ends).

"Late" is the loop's own lateness or how far the pools that the loop hands chunks to are
behind it (:func:`~rxreact.scheduling.handoff_lateness`), whichever is more. Once reading got
cheap the loop kept on time while the agent's pool fell 15 s behind it (workload 9): the
chunks waited in the pool's queue, and only the loop's lateness was looked at.

::

    lateness:       ok ...... late (>= LATE_S) ..... ok ..........
    new attempts:   --a--b--------c---d----------------|c-d|--e--->
    started:        --a--b-----------------------------c-d----e--->
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from rxreact.scheduling import handoff_lateness

__all__ = ["BATCH", "LATE_S", "PROBE_S", "Admission"]

PROBE_S = 0.05
"""How often the loop's lateness is measured, while there is anything to measure."""

LATE_S = 0.1
"""A probe that runs this much after its time means the loop is late: new attempts wait. A
loop that keeps up runs its timers within a few milliseconds."""

BATCH = 32
"""Waiting attempts let in per on-time probe (640 a second): enough for any arrival rate a
loop that was just late can carry, small enough not to make it late again at once."""


class Admission:
    """Starts of attempts on one loop, held back in order while the loop is late.

    :meth:`enter` and :meth:`lateness` run on the loop only. The probe is a timer of the loop
    that runs only while attempts are active (:meth:`enter` starts it; it stops when the last
    one has left and nobody waits), so an idle process has no timer. Each probe measures the
    loop's lateness and asks ``behind`` how far the loop's consumers are behind (default:
    :func:`~rxreact.scheduling.handoff_lateness` of the loop); the larger decides.

    A pool whose every worker blocks (subscribers that never return) is behind for as long
    as they block: new requests then wait here, where they would have stalled in its queue.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        behind: Callable[[], float] | None = None,
    ) -> None:
        self._loop = loop
        self._behind = behind or (lambda: handoff_lateness(loop))
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._late = False
        self._probing = False
        self.late_s = LATE_S
        """The lateness from which new attempts wait (tests set it to hold or let go)."""
        self.active = 0
        """Admitted attempts not yet left (each :meth:`enter` is matched by :meth:`leave`)."""

    @property
    def waiting(self) -> int:
        """Attempts waiting to start (cancelled ones included until they are passed over)."""
        return len(self._waiting)

    async def enter(self) -> None:
        """Return when the attempt may start: at once while the loop is on time and nobody
        waits. Cancelling the waiting task takes it out of the line."""
        if not self._probing:
            self._probe_later()
        if self._late or self._waiting:
            waiter = self._loop.create_future()
            self._waiting.append(waiter)
            await waiter  # cancelled: lateness() passes the cancelled future over
        self.active += 1

    def leave(self) -> None:
        """The admitted attempt ended (however)."""
        self.active -= 1

    def lateness(self, seconds: float) -> None:
        """What a probe measured: late (new attempts wait) or on time (a batch is let in)."""
        self._late = seconds >= self.late_s
        if self._late:
            return
        let_in = 0
        while self._waiting and let_in < BATCH:
            waiter = self._waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                let_in += 1

    def _probe_later(self) -> None:
        self._probing = True
        due = self._loop.time() + PROBE_S
        self._loop.call_at(due, self._probe, due)

    def _probe(self, due: float) -> None:
        self.lateness(max(self._loop.time() - due, self._behind()))
        if self.active or self._waiting:
            self._probe_later()
        else:
            self._probing = False
