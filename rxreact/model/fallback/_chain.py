"""One subscription of a :class:`~rxreact.FallbackModel`'s stream: its attempts, in order.

::

    A:        -a-b-X                      X: a failure the chain falls back on
    B:              -a'-b'-c'-|
    chain:    -a-b--S-a'-b'-c'-|          S: the switch chunk (restart: a, b are void)

    hedged:   A: ------------(disposed)   no first chunk by ``hedge_after``: B starts too
              B:     --a'-b'-|            the first to send a chunk wins, the other is disposed
    chain:    -------S-a'-b'-|            (S: restart=False, nothing of A was shown)

Once an attempt has sent its first chunk (and won), its observer's ``on_next`` *is* the
subscriber's: a healthy model's chunks cost nothing here (``Exchange`` looks ``on_next`` up
per chunk). With ``hold``, chunks go through a :class:`~rxreact.model.fallback._hold.ChunkHold`.
State changes (an attempt starting, winning, failing; the hedge timer; dispose) are made
under one lock; an attempt is subscribed outside it.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from reactivex import abc
from reactivex.disposable import SingleAssignmentDisposable

from rxreact.errors import CircuitOpenError
from rxreact.messages import ChatRequest, Usage
from rxreact.model.chunks import ChatChunk
from rxreact.model.fallback._hold import ChunkHold
from rxreact.model.switch import ModelSwitch, switch_chunk
from rxreact.rx._fused import Keeper, subscribe_observer
from rxreact.scheduling import timer_scheduler

if TYPE_CHECKING:
    from rxreact.model.fallback.fallback_model import FallbackModel

__all__ = ["Chain"]


def _ignore(_: ChatChunk) -> None:
    """The ``on_next`` of an attempt that ended or lost: a late chunk goes nowhere."""


class _Attempt(Keeper):
    """One model's request within a chain."""

    __slots__ = ("chain", "ended_", "index", "on_next", "started_at", "subscription", "won")

    def __init__(self, chain: Chain, index: int, started_at: float) -> None:
        self.chain = chain
        self.index = index
        self.started_at = started_at
        self.won = False
        self.ended_ = False
        self.subscription = SingleAssignmentDisposable()
        self.on_next = self._first

    def _first(self, chunk: ChatChunk) -> None:
        # Called once for a Fused source (then on_next is replaced); a source that bound
        # on_next at subscribe keeps calling this, and pays one call a chunk.
        if self.won:
            self.chain.forward(chunk)
        else:
            self.chain.first_chunk(self, chunk)

    def ended(self) -> bool:
        return self.ended_

    def on_error(self, error: Exception) -> None:
        self.chain.failed(self, error)

    def on_completed(self) -> None:
        self.chain.completed(self)


class Chain(abc.DisposableBase):
    """The attempts of one stream subscription, and what its subscriber has seen."""

    def __init__(
        self,
        fallback: FallbackModel,
        request: ChatRequest,
        observer: abc.ObserverBase[ChatChunk],
        scheduler: abc.SchedulerBase | None,
    ) -> None:
        self._fallback = fallback
        self._request = request
        self._observer = observer
        self._scheduler = scheduler
        self._timer = timer_scheduler(scheduler)
        self._lock = threading.RLock()
        self._pending: list[_Attempt] = []  # started, no first chunk yet
        self._winner: _Attempt | None = None
        self._next = 0  # the next model to try
        self._label = fallback.labels[0]  # the model the subscriber's chunks are from
        self._shown = False  # chunks of self._label reached the subscriber
        self._hold: ChunkHold | None = None
        self._hedge: abc.DisposableBase | None = None
        self._over = False

    # -- starting attempts --------------------------------------------------------------------

    def start(self) -> None:
        """The first attempt (and the hedge timer, when the model hedges)."""
        attempt = self._launch("", announce=True)
        delay = self._fallback.hedge_delay()
        # Only the first model is hedged, while it is still waiting for its first chunk.
        first = attempt is not None and attempt.index == 0 and not attempt.ended_
        if first and delay is not None and len(self._fallback.models) > 1:
            self._hedge = self._timer.schedule_relative(delay, self._hedge_now)

    def _launch(self, reason: str, announce: bool) -> _Attempt | None:
        """Start the next model whose breaker lets it in; ``announce``: tell the subscriber
        at once (a move after a failure) rather than when it wins (a hedge). ``None``: none
        left to start (the chain has failed if nothing else is pending)."""
        fallback = self._fallback
        with self._lock:
            if self._over:
                return None
            skipped: list[int] = []
            index = self._next
            while index < len(fallback.models):
                breaker = fallback.breakers[index] if fallback.breakers else None
                if breaker is None or breaker.acquire()[0]:
                    break
                skipped.append(index)
                index += 1
            if index >= len(fallback.models):
                self._next = index
                if skipped and not self._pending and self._winner is None and not reason:
                    # Nothing was tried at all: every breaker is open.
                    self._fail(CircuitOpenError(fallback.breaker_states()))
                return None
            self._next = index + 1
            label = fallback.labels[index]
            if skipped and not reason:
                reason = f"circuit {fallback.breaker_states()[fallback.labels[skipped[-1]]]}"
            if announce and label != self._label:
                self._switch_to(label, reason)
            attempt = _Attempt(self, index, self._timer.now.timestamp())
            self._pending.append(attempt)
        try:
            stream = fallback.models[index].stream(self._request)
            attempt.subscription.disposable = subscribe_observer(stream, attempt, self._scheduler)
        except Exception as error:  # a model that cannot even make its stream
            self.failed(attempt, error)
        return attempt

    def _hedge_now(self, *_: Any) -> None:
        with self._lock:
            if self._over or self._winner is not None or not self._pending:
                return
        self._launch("hedge", announce=False)

    def _switch_to(self, label: str, reason: str) -> None:
        """Tell the subscriber its chunks come from ``label`` from now on (under the lock)."""
        hold = self._hold
        restart = self._shown if hold is None else hold.released
        usage: Usage | None = hold.usage if hold is not None else None
        switch = ModelSwitch(self._label, label, reason, restart, usage)
        self._label = label
        self._shown = False
        self._hold = None
        self._observer.on_next(switch_chunk(switch))

    # -- what attempts report -----------------------------------------------------------------

    def first_chunk(self, attempt: _Attempt, chunk: ChatChunk) -> None:
        losers: list[_Attempt] = []
        with self._lock:
            if self._over or attempt.ended_ or self._winner is not None:
                return
            self._winner = attempt
            attempt.won = True
            losers = [a for a in self._pending if a is not attempt]
            self._pending = []
            if self._hedge is not None:
                self._hedge.dispose()
            fallback = self._fallback
            fallback.first_chunk_latency(
                attempt.index, self._timer.now.timestamp() - attempt.started_at
            )
            label = fallback.labels[attempt.index]
            if label != self._label:
                self._switch_to(label, "hedge: answered first")
            if fallback.hold is not None:
                self._hold = ChunkHold(fallback.hold)
                attempt.on_next = self._held
            else:
                self._shown = True
                attempt.on_next = self._observer.on_next
            attempt.on_next(chunk)
        for loser in losers:
            self._drop(loser)

    def forward(self, chunk: ChatChunk) -> None:
        """A chunk of the winner, from a source that bound ``on_next`` before it won."""
        if self._hold is not None:
            self._held(chunk)
        else:
            self._observer.on_next(chunk)

    def _held(self, chunk: ChatChunk) -> None:
        hold = self._hold
        if hold is None:  # the attempt lost its place (failed, disposed)
            return
        emit = self._observer.on_next
        for released in hold.add(chunk):
            emit(released)

    def failed(self, attempt: _Attempt, error: Exception) -> None:
        fallback = self._fallback
        with self._lock:
            if self._over or attempt.ended_:
                return
            attempt.ended_ = True
            attempt.on_next = _ignore
            fallback.record(attempt.index, error)
            moves = fallback.falls_back(error)
            if attempt is self._winner:
                self._winner = None
            elif attempt in self._pending:
                self._pending.remove(attempt)
            if not moves:
                self._fail(error)
                return
            if self._pending:  # a hedged attempt still runs: it may yet answer
                return
            if self._hedge is not None:
                self._hedge.dispose()
            reason = f"{type(error).__name__}: {error}"
            if self._launch(reason, announce=True) is None and not self._pending:
                self._fail(error)

    def completed(self, attempt: _Attempt) -> None:
        with self._lock:
            if self._over or attempt.ended_:
                return
            attempt.ended_ = True
            self._fallback.record(attempt.index, None)
            if self._winner is None:  # an empty answer: it wins by ending first
                self._winner = attempt
                losers, self._pending = [a for a in self._pending if a is not attempt], []
                for loser in losers:
                    self._drop(loser)
            elif attempt is not self._winner:
                return
            self._over = True
            if self._hedge is not None:
                self._hedge.dispose()
            hold = self._hold
            emit = self._observer.on_next
            if hold is not None:
                for chunk in hold.flush():
                    emit(chunk)
        self._observer.on_completed()

    def _fail(self, error: Exception) -> None:
        """End the chain with ``error`` (under the lock): every attempt still out goes."""
        self._over = True
        out = [*self._pending, *([self._winner] if self._winner is not None else [])]
        self._pending, self._winner = [], None
        for attempt in out:
            self._drop(attempt)
        if self._hedge is not None:
            self._hedge.dispose()
        self._observer.on_error(error)

    def _drop(self, attempt: _Attempt) -> None:
        """Dispose ``attempt`` (a hedge's loser, or one still out at the end): its socket is
        closed; a half-open breaker's probe it held is given back."""
        attempt.on_next = _ignore
        if not attempt.ended_:
            attempt.ended_ = True
            self._fallback.release(attempt.index)
        attempt.subscription.dispose()

    def dispose(self) -> None:
        with self._lock:
            if self._over:
                return
            self._over = True
            out = [*self._pending, *([self._winner] if self._winner is not None else [])]
            self._pending, self._winner = [], None
            if self._hedge is not None:
                self._hedge.dispose()
        for attempt in out:
            self._drop(attempt)
