"""One model request as one Observable subscription: attempts, retries, watchdog, cancellation.

:class:`ModelCall` holds what every I/O mode shares: the retry policy (only before the first
emission, backoff on the timer scheduler), the watchdog, and the lock and flag that keep
everything from the observer once ``dispose()`` has returned. How an attempt runs and how a
running one is aborted is the mode's: :class:`~rxreact.model.http._thread_call.ThreadCall`
(a blocking attempt on a thread, aborted by shutting its socket down) and
:class:`~rxreact.model.http._aio.LoopCall` (a coroutine on the shared asyncio loop, aborted
by cancelling its task).

Timers: the watchdog and the retry backoff are relative schedules on the subscribe-time
scheduler (so a virtual-time scheduler drives them), else on the shared timer pool of
:func:`rxreact.scheduling.timer_scheduler` (one timer thread for the whole process; a
``TimeoutScheduler`` would start a thread per timer, ~0.25 ms of CPU each). A trampoline or
immediate scheduler would run a timer by blocking the calling thread, so those are replaced
by the shared one too.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime
from typing import Any, Generic, NamedTuple, TypeVar

from reactivex import abc

from rxreact.errors import ModelTimeoutError
from rxreact.model.retry_policy import Backoff, retry_delay
from rxreact.rx._ordered_serial import OrderedSerialDisposable

__all__ = ["CallSettings", "ModelCall", "Stopped", "Timeouts"]

_T = TypeVar("_T")
log = logging.getLogger("rxreact.model.http")

_RECHECK = 0.05
"""Seconds before the watchdog looks again when the reader holds the lock."""


class Timeouts(NamedTuple):
    """The three limits of an attempt, in seconds; ``None`` = no limit."""

    connect: float | None
    """Opening the connection (and waiting for a free pooled one)."""
    first_chunk: float | None
    """From the start of the attempt to the first SSE event (non-streaming: to the headers)."""
    between_chunks: float | None
    """The longest silence between two events while the body is read."""

    def for_httpx(self) -> dict[str, float | None]:
        """A fresh httpx ``timeout`` extension for one attempt (see :meth:`ModelCall.attached`).

        Until the headers arrive, httpx's read limit is the first-chunk limit: on a reused
        keep-alive connection the watchdog cannot reach the socket yet, so httpx enforces it.
        """
        return {
            "connect": self.connect,
            "read": self.first_chunk,
            "write": self.first_chunk,
            "pool": self.connect,
        }

    @property
    def body_read(self) -> float | None:
        """httpx's read limit once the headers are in: only a backstop behind the watchdog,
        which owns the precise first-chunk and between-chunk rules from then on."""
        if self.first_chunk is None or self.between_chunks is None:
            return None
        return max(self.first_chunk, self.between_chunks)


class CallSettings(NamedTuple):
    """What a subscription's attempts follow: limits, retries, and where timed waits run."""

    timeouts: Timeouts
    max_retries: int
    backoff: Backoff
    timer: abc.SchedulerBase
    """Runs the watchdog and the backoff (see :func:`rxreact.scheduling.timer_scheduler`)."""


class Stopped(Exception):
    """Raised into the read loop when the subscription was disposed: stop reading."""


class ModelCall(abc.DisposableBase, Generic[_T]):
    """The state of one subscription: attempts, retries, the watchdog and cancellation.

    An attempt sends the request, emits with :meth:`emit`, and returns normally for a normal
    end (it may call :meth:`finish` earlier) or raises a :class:`ModelError`. Failed attempts
    are retried per :func:`~rxreact.model.retry_policy.retry_delay` until something was emitted.
    A subclass runs the attempts (:meth:`_schedule_attempt`, which calls :meth:`_begin` and
    :meth:`_end` around each) and aborts a running one (:meth:`_abort`).
    """

    def __init__(self, observer: abc.ObserverBase[_T], settings: CallSettings) -> None:
        timeouts, self._max_retries, self._backoff, timer = settings
        self.timeouts = timeouts
        self._observer = observer
        self._timer = timer
        # Reentrant: an observer may dispose from inside on_next, on this very thread.
        self._lock = threading.RLock()
        self._disposed = False
        self._done = False  # a terminal notification was sent
        self._emitted = False
        self._retries = 0
        # Guards the two timer slots below, never held while calling out. Not ``_lock``: the
        # watchdog re-arms from the shared timer thread, which must not wait for a reader
        # that holds ``_lock`` while it hands chunks to a slow consumer.
        self._slots = threading.Lock()
        # The scheduled attempt, or the backoff timer. Ordered: an attempt that fails at once
        # schedules its retry before ``_schedule_attempt`` has stored the attempt's handle.
        self._task = OrderedSerialDisposable(self._slots)
        # The watchdog's pending check (a SerialDisposable's job, done in a field: one fewer
        # disposable and RLock per call, alive as long as the stream).
        self._watchdog: abc.DisposableBase | None = None
        # Per attempt:
        self._timed_out: ModelTimeoutError | None = None
        self._attempt_over = True
        self._started: datetime = timer.now
        self._last_event: datetime | None = None
        self.httpx_timeout = timeouts.for_httpx()
        """The httpx ``timeout`` extension of the current attempt (see :meth:`headers_in`)."""
        self.busy = False
        """The reader is handing a batch of events downstream (a slow consumer is not silence)."""

    @property
    def phase(self) -> str:
        """``"first_chunk"`` until the first event arrived, then ``"between_chunks"``."""
        return "first_chunk" if self._last_event is None else "between_chunks"

    def start(self) -> abc.DisposableBase:
        """Schedule the first attempt; the returned disposable (the call itself: ``dispose``
        is idempotent, so no ``Disposable`` and RLock around it) cancels the whole call."""
        self._schedule_attempt()
        return self

    def dispose(self) -> None:
        """Cancel: no notification after this returns; a running attempt is aborted."""
        with self._lock:
            if self._disposed:
                return
            self._disposed = True
            self._abort()
        self._watch(None)
        self._task.dispose()

    # -- used by the attempt, on the I/O thread ---------------------------------------------

    def headers_in(self) -> None:
        """The response headers arrived: lift httpx's read limit to the backstop.

        httpcore reads it again when the body iteration starts. (Should it stop doing so, a
        body silence would still end in a timeout, at the first-chunk limit.)
        """
        self.httpx_timeout["read"] = self.timeouts.body_read

    def emit(self, value: _T) -> None:
        """``on_next``, unless the call was disposed or ended (then the read loop is stopped)."""
        with self._lock:
            if self._disposed or self._done:
                raise Stopped
            self._emitted = True
            self._observer.on_next(value)

    def finish(self) -> None:
        """``on_completed`` now (the attempt may go on draining the body, silently)."""
        with self._lock:
            if self._disposed or self._done:
                return
            self._done = True
            self._observer.on_completed()

    def batch_read(self) -> None:
        """A batch of events was handed downstream: the silence clock restarts now."""
        first = self._last_event is None
        now = self._last_event = self._timer.now
        self.busy = False
        if first:
            # The armed check looks at the silence when it fires; move it earlier only if the
            # first silence limit ends before it (not with the default, equal limits).
            between, first_chunk = self.timeouts.between_chunks, self.timeouts.first_chunk
            elapsed = (now - self._started).total_seconds()
            if between is not None and (first_chunk is None or between < first_chunk - elapsed):
                with self._lock:
                    if not self._attempt_over:
                        self._arm(between)

    # -- for the subclasses -----------------------------------------------------------------

    def _schedule_attempt(self) -> None:
        """Start an attempt on the I/O side, kept in ``self._task`` (disposing it cancels a
        scheduled attempt that has not started yet)."""
        raise NotImplementedError

    def _abort(self) -> None:
        """Make the running attempt stop soon (called with the lock held, from any thread)."""
        raise NotImplementedError

    def _begin(self) -> bool:
        """Called first by an attempt, on the I/O side: reset its state, arm the watchdog.
        False: the call was disposed, do not send anything."""
        with self._lock:
            if self._disposed:
                return False
            self._attempt_over = False
            self._timed_out = None
            self._last_event = None
            self.httpx_timeout = self.timeouts.for_httpx()
            self.busy = False
            self._started = self._timer.now
            if self.timeouts.first_chunk is not None:
                self._arm(self.timeouts.first_chunk)
            return True

    def _end(self, error: Exception | None) -> None:
        """Called last by an attempt with how it ended: complete, fail, or schedule a retry."""
        self._watch(None)
        with self._lock:
            self._attempt_over = True
            self._attempt_ended()
            if self._disposed or self._done:
                return
            if self._timed_out is not None:
                error = self._timed_out
        if error is None:
            self.finish()
            return
        delay = None
        if not self._emitted:
            delay = retry_delay(error, self._retries, self._max_retries, self._backoff)
        if delay is None:
            self._fail(error)
            return
        self._retries += 1
        log.info("retry %d/%d in %.3g s after: %s", self._retries, self._max_retries, delay, error)
        with self._lock:
            if not self._disposed:
                self._task.replace_with(lambda: self._timer.schedule_relative(delay, self._retry))

    def _attempt_ended(self) -> None:
        """Forget the attempt's I/O handles (called with the lock held)."""

    # -- internals --------------------------------------------------------------------------

    def _retry(self, _: abc.SchedulerBase, __: Any = None) -> None:
        with self._lock:
            if not self._disposed:
                self._schedule_attempt()

    def _fail(self, error: Exception) -> None:
        with self._lock:
            if self._disposed or self._done:
                return
            self._done = True
            self._observer.on_error(error)

    def _arm(self, seconds: float) -> None:
        self._watch(self._timer.schedule_relative(seconds, self._check))

    def _watch(self, check: abc.DisposableBase | None) -> None:
        """Hold ``check`` as the watchdog's pending check (``None``: none), disposing the one
        held before; once the call is disposed, ``check`` is disposed instead of held."""
        with self._slots:
            old, self._watchdog = self._watchdog, None
            if check is not None and not self._disposed:
                self._watchdog, check = check, None
        if old is not None:
            old.dispose()
        if check is not None:
            check.dispose()

    def _check(self, _: abc.SchedulerBase, __: Any = None) -> None:
        """The watchdog: time out a silent server, or look again when the limit ends."""
        # Never block the timer thread (it is shared by every call): the lock is held while
        # chunks are handed downstream, which a slow consumer can make long.
        if not self._lock.acquire(blocking=False):
            self._arm(_RECHECK)
            return
        try:
            self._check_locked()
        finally:
            self._lock.release()

    def _check_locked(self) -> None:
        if self._disposed or self._attempt_over:
            return
        last = self._last_event
        limit = self.timeouts.first_chunk if last is None else self.timeouts.between_chunks
        if limit is None:
            return
        if self.busy:  # the consumer is slow, not the server
            self._arm(limit)
            return
        silent = (self._timer.now - (self._started if last is None else last)).total_seconds()
        if silent < limit:
            self._arm(limit - silent)
            return
        self._timed_out = ModelTimeoutError(self.phase, limit)
        log.debug("%s: aborting the read", self._timed_out)
        self._abort()
