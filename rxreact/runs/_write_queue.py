"""The owner's side of a durable event log: writes queued, sent in fenced batches.

``append`` queues the event and returns; one flush at a time (on a small shared pool) sends
everything queued so far, from every run of the process, in one batch: one pipeline for
Redis (:mod:`rxreact.runs.redis._writes`), one transaction for SQLite
(:mod:`rxreact.runs.sqlite._writes`). Each store implements :meth:`WriteQueue._send`; what is
common lives here. One flush at a time keeps every run's writes in ``seq`` order, and the run
never waits for the store.

Every write is **fenced**: a run's writes land only while the store still names this owner
and token for it (:class:`Fence`), checked in the same atomic step as the write. A process
that was only paused (a GC pause, ``SIGSTOP``, a partition) and whose run another process
took over finds its very next batch refused: the run is stopped (its ``on_fenced``), its
queued and later writes are dropped, and a warning is logged; other runs are not affected.

A batch the store did not take at all (a Redis restart, a SQLite write lock held too long) is
sent again after :data:`RETRY_WAITS`, before anything queued after it, and exactly as it was,
so a write that did arrive the first time is a harmless duplicate. Only when every wait is
spent is the batch dropped, with a warning: the run itself went on for its local subscribers
all along; followers in other processes miss those events.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from reactivex import abc

from rxreact.events import AgentEvent
from rxreact.runs._record import RunRecord
from rxreact.scheduling import shared_scheduler

__all__ = ["RETRY_WAITS", "Fence", "QueuedRunWriter", "Sent", "WriteQueue"]

RETRY_WAITS: tuple[float, ...] = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 5.0, 5.0)
"""Seconds before each new try of a batch the store did not take (about 19 s in all: a Redis
restart or a failover fits, an outage that lasts does not hold the queue)."""

Item = tuple[Any, ...]
"""A queued write, its fence second and its ``on_sent`` (or ``None``) last:
``("e", fence, event, on_sent)``, ``("ckpt", fence, body, n, seq, on_sent)`` (checkpoint ``n``
after event ``seq``), ``("park", fence, conversation_id, since, deadline, on_sent)``,
``("unpark", fence, on_sent)`` or ``("end", fence, conversation_id, seq, error, on_sent)``."""

_fence_lock = threading.Lock()  # a run may be fenced out by a flush and a heartbeat at once


@dataclass(eq=False)
class Fence:
    """Who may write a run (its owner and token), where its writer is, and what to do once
    the store names someone else."""

    run_id: str
    owner: str
    token: int
    on_fenced: Callable[[], None]
    fenced: bool = False
    """The store refused this owner: every later write of the run is dropped."""
    checkpoints: int = 0
    """Checkpoints queued so far (the next one's ``n``)."""
    last_seq: int = 0
    """The last event queued."""


class Sent(NamedTuple):
    """How a batch went, by run: anything not named here was written."""

    refused: list[Fence]
    """Runs the store no longer lets this owner write (nothing of theirs was written)."""
    failed: list[Fence]
    """Runs whose writes the store refused for another reason (it was logged)."""


class WriteQueue(ABC):
    """Queued writes of one log's runs and the one flush that sends them; a store implements
    :meth:`_send`."""

    store: ClassVar[str] = "event log"
    """How log messages name the store."""
    log: ClassVar[logging.Logger] = logging.getLogger(__name__)

    def __init__(
        self,
        retry_on: type[Exception] | tuple[type[Exception], ...],
        scheduler_name: str,
        gather_s: float = 0.0,
    ) -> None:
        self._retry_on = retry_on
        self._gather_s = gather_s
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)  # notified when a flush found nothing left
        self._pending: deque[Item] = deque()
        self._flushing = False
        self._failed: list[Item] | None = None  # the batch to send again first
        self._tries = 0  # of the batch being sent: 0 the first time
        self.retry_waits: tuple[float, ...] = RETRY_WAITS
        self.scheduler: abc.SchedulerBase = shared_scheduler(scheduler_name, 2)

    def put(
        self, item: Item, on_sent: Callable[[bool], None] | None = None, then: Item | None = None
    ) -> None:
        """Queue ``item`` (see :data:`Item`, without its ``on_sent``); ``on_sent(written)`` is
        called once its batch was written (True), or refused or given up (False). ``then``,
        if any, is queued right after it, in the same batch (an event and the park it leads
        to: whoever reads the one from the store reads the other)."""
        with self._lock:
            self._pending.append((*item, on_sent))
            if then is not None:
                self._pending.append((*then, None))
            if self._flushing:
                return
            self._flushing = True
        if self._gather_s:  # a write costs far more than a queue: wait for more to share it
            self.scheduler.schedule_relative(self._gather_s, self._flush)
        else:
            self.scheduler.schedule(self._flush)

    def wait_sent(self, timeout: float | None) -> bool:
        """Wait until everything queued so far was sent; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._flushing, timeout)

    def fence_out(self, fence: Fence) -> None:
        """The store names another owner for the run: stop it (once), drop its writes."""
        with _fence_lock:
            if fence.fenced:
                return
            fence.fenced = True
        self.log.warning(
            "%s: run %s has another owner now; this process stops it", self.store, fence.run_id
        )
        fence.on_fenced()

    @abstractmethod
    def _send(self, batch: list[Item]) -> Sent:
        """Write ``batch`` (never empty, no fenced run) in one atomic step per run, each run's
        step checking its fence; raise ``retry_on`` if the store took none of it."""

    def _flush(self, _: abc.SchedulerBase, __: Any = None) -> None:
        while True:
            with self._lock:
                batch, self._failed = self._failed, None
                if batch is None:
                    if not self._pending:
                        self._flushing = False
                        self._idle.notify_all()
                        return
                    batch = list(self._pending)
                    self._pending.clear()
                    self._tries = 0
            live = [item for item in batch if not item[1].fenced]
            try:
                sent = self._send(live) if live else Sent([], [])
            except self._retry_on as error:
                if self._tries < len(self.retry_waits):
                    with self._lock:
                        self._failed = batch  # still flushing: wait_sent() waits for it
                    wait = self.retry_waits[self._tries]
                    self._tries += 1
                    self.log.info("%s: sending %d writes again: %s", self.store, len(batch), error)
                    self.scheduler.schedule_relative(wait, self._flush)
                    return
                # The run goes on for local subscribers; followers elsewhere miss these.
                self.log.warning("%s: %d writes failed: %s", self.store, len(batch), error)
                _settle(batch, {id(item[1]) for item in batch})
                continue
            for fence in sent.refused:
                self.fence_out(fence)
            _settle(batch, {id(fence) for fence in (*sent.refused, *sent.failed)})


def _settle(batch: list[Item], unwritten: set[int]) -> None:
    """Tell the writes of ``batch`` that wait for it how their run's writes went."""
    for item in batch:
        on_sent = item[-1]
        if on_sent is not None:
            on_sent(not item[1].fenced and id(item[1]) not in unwritten)


class QueuedRunWriter:
    """A run's writer: the queue first, then the local record (subscribers here).

    It can park its run (:mod:`rxreact.runs.parking`): the next event, checkpoint or end
    after the park first queues the unpark, so the store never says "parked" about a run that
    went on.
    """

    __slots__ = (
        "_ended",
        "_fence",
        "_lock",
        "_on_end",
        "_park_next",
        "_queue",
        "_record",
        "_unparking",
        "parked",
    )

    def __init__(
        self,
        queue: WriteQueue,
        record: RunRecord,
        fence: Fence,
        on_end: Callable[[RunRecord], None],
    ) -> None:
        self._queue = queue
        self._record = record
        self._fence = fence
        self._on_end = on_end
        self._lock = threading.Lock()
        self._ended = False
        self.parked: bool = False
        """True from the park until the run goes on (see the class docstring)."""
        self._park_next: float | bool | None = False  # park after the next event: its deadline
        self._unparking: list[Callable[[bool], None]] | None = None  # told when it is written

    def append(self, event: AgentEvent) -> None:
        """Queue the next event for the store and add it here."""
        # The lock orders a late event against end() from cancel() on another thread: a write
        # after the end marker would break the log's order (Redis refuses its id).
        with self._lock:
            if self._ended:
                return
            if self.parked:
                self._unpark(None)
            fence = self._fence
            fence.last_seq = event.seq
            if self._park_next is False:
                self._queue.put(("e", fence, event))
            else:  # the event and its park in one batch: a reader of the one reads the other
                deadline, self._park_next = self._park_next, False
                self.parked = True
                park = ("park", fence, self._record.conversation_id, time.time(), deadline)
                self._queue.put(("e", fence, event), then=park)
            # After the queue: a subscriber here that saw the event can flush() the park too.
            self._record.append(event)

    def checkpoint(self, body: bytes, on_sent: Callable[[bool], None]) -> None:
        """Queue a checkpoint after the events so far (in the same batch as those queued with
        it); ``on_sent(written)`` once that batch went through or was refused."""
        with self._lock:
            if self._ended:
                on_sent(False)
                return
            if self.parked:
                self._unpark(None)
            fence = self._fence
            self._queue.put(("ckpt", fence, body, fence.checkpoints, fence.last_seq), on_sent)
            fence.checkpoints += 1

    def park(self, deadline: float | None) -> None:
        """Park the run right after the next event (the one that leaves it waiting only for
        approvals), until ``deadline`` (wall clock, or none)."""
        with self._lock:
            if not self._ended:
                self._park_next = deadline

    def unpark(self, on_sent: Callable[[bool], None]) -> None:
        """Queue "running again" if parked; ``on_sent(written)`` once it is written. Also
        waits for an unpark already on its way (two decisions at once: neither call may run
        before the store stops saying "parked"). At once: True when neither, False once the
        run ended."""
        with self._lock:
            if not self._ended:
                if self._unparking is not None:
                    self._unparking.append(on_sent)
                    return
                if self.parked:
                    self._unpark(on_sent)
                    return
            ended = self._ended
        on_sent(not ended)

    def _unpark(self, on_sent: Callable[[bool], None] | None) -> None:
        self.parked = False
        waiting: list[Callable[[bool], None]] = [] if on_sent is None else [on_sent]
        self._unparking = waiting

        def sent(written: bool) -> None:
            with self._lock:
                if self._unparking is waiting:
                    self._unparking = None
            for tell in waiting:
                tell(written)

        self._queue.put(("unpark", self._fence), sent)

    def end(self, error: Exception | None = None) -> None:
        """End the run here and queue its end marker (``seq`` one past the last event)."""
        with self._lock:
            if self._ended:
                return
            self._ended = True
            record = self._record
            self._on_end(record)
            record.end(error)
            fence = self._fence
            self._queue.put(("end", fence, record.conversation_id, fence.last_seq + 1, error))
