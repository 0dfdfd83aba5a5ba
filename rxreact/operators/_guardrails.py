"""``RunGuard``: a run's guardrails, as an operator over its events and two steps of its loop.

Input guardrails start with the run (``begin``, a step before round 1) and run while round 1
streams; answer text waits behind them. Output guardrails check each round's text at its
sentence boundaries and at its end; with ``hold="sentence"`` the text waits behind the check
of its sentence, with ``hold="none"`` it goes out at once. Holding never reorders: while a
``text_delta`` waits, every event after it waits too (so a round's ``round_finished`` never
overtakes its text)::

    source:        -g-R-a-b-.-c-F-------------|     g guardrail_started (begin), R round_started
    input check:   -[----------]P                   a b c text, "." a sentence end in b
    output check:              [---]  [--]          F round_finished, P guardrail_passed
    hold=sentence: -g-R--------P-ab---cF------|     (each sentence once its check passed)
    hold=none:     -g-R--------P-ab-c-F-------|
    a trip:        -g-R--------P-ab---T#            T guardrail_tripped, # GuardrailTrippedError

A trip ends the run: ``guardrail_tripped``, then ``on_error`` with
:class:`~rxreact.GuardrailTrippedError`; the source is disposed at once (model stream closed,
running tools' tokens set) and what waited is dropped. ``settled`` is the step before the run
commits its turn: it completes once every check has passed, so a run that trips stores
nothing. Guardrails run on the tools scheduler (sync), rxreact's I/O loop (``async def``), or
as the Observable they return, so a ``TestScheduler`` runs them in virtual time.

Only the run's own events are held or checked; those of agents it calls as tools (a non-empty
``path``) pass in order like any other event.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from rxreact.cancellation import CancellationToken
from rxreact.checks.guardrails import GuardrailResult, Hold, guardrail_name, sentence_ends
from rxreact.errors import GuardrailTrippedError
from rxreact.events import (
    GuardrailPassed,
    GuardrailStarted,
    GuardrailTripped,
    RoundFinished,
    RoundStarted,
    TextDelta,
)
from rxreact.messages import Message
from rxreact.rx._call_once import call_once
from rxreact.rx._fused import Fused, subscribe_fused
from rxreact.tracing import RunTracer

__all__ = ["RunGuard"]

_TAIL = 8  # characters kept to find a sentence end split across two deltas


class RunGuard:
    """One run's guardrails (a run is one subscription: the state lives here).

    Args:
        inputs: ``fn(question, history)`` guardrails.
        outputs: ``fn(text_so_far)`` guardrails.
        hold: ``"sentence"`` or ``"none"`` (see :data:`~rxreact.checks.guardrails.Hold`).
        scheduler: where sync guardrails run (the agent's tools scheduler).
        trace: the run's tracer: each check in an ``execute_guardrail`` span (``None``: none).
    """

    def __init__(
        self,
        inputs: Sequence[Any],
        outputs: Sequence[Any],
        hold: Hold,
        scheduler: abc.SchedulerBase,
        trace: RunTracer | None = None,
    ) -> None:
        self._trace = trace
        self._inputs = inputs
        self._outputs = outputs
        self._hold_sentences = bool(outputs) and hold == "sentence"
        self._scheduler = scheduler
        self._lock = threading.RLock()
        self._observer: abc.ObserverBase[Any] | None = None
        self._over = False
        self._completed = False
        self._queue: deque[tuple[Any, int, int]] = deque()  # (event, text start, text end)
        self._checks = CompositeDisposable()
        self._source: abc.DisposableBase | None = None
        self._waiters: list[abc.ObserverBase[Any]] = []
        self._inputs_left = len(inputs)
        self._round = 1
        # The run's own answer text, all rounds one after the other; offsets index it.
        self._pieces: list[str] = []
        self._length = 0
        self._tail = ""
        self._round_start = 0
        self._released = 0  # text delivered so far
        self._approved = 0  # text every output guardrail passed
        self._points: list[tuple[int, int]] = []  # (offset, its round's start) to check
        self._checking = False

    @classmethod
    def of(cls, agent: Any, trace: RunTracer | None) -> RunGuard | None:
        """The guard of one run of ``agent`` (a ``ReactAgent``), or ``None`` without guardrails:
        then the run has no guard layer at all."""
        if not (agent.input_guardrails or agent.output_guardrails):
            return None
        return cls(
            agent.input_guardrails,
            agent.output_guardrails,
            agent.hold,
            agent.tools_scheduler,
            trace,
        )

    # -- the operator -----------------------------------------------------------------------

    def events(self, source: Observable[Any]) -> Observable[Any]:
        """``source`` (the run's steps) with its text held and checked, as drawn above."""

        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            self._observer = observer
            subscription = subscribe_fused(
                source, self._on_next, self._on_error, self._on_completed, scheduler
            )
            with self._lock:
                over = self._over
                self._source = subscription
            if over:
                subscription.dispose()
            return CompositeDisposable(Disposable(self._stop), subscription, self._checks)

        return Fused(subscribe)

    def _on_next(self, event: Any) -> None:
        with self._lock:
            if self._over:
                return
            start = end = -1
            if not event.path:
                kind = type(event)
                if kind is TextDelta:
                    start, end = self._length, self._take_text(event.delta)
                elif kind is RoundStarted:
                    self._round, self._round_start = event.round, self._length
                elif kind is RoundFinished and self._outputs and self._length > self._round_start:
                    self._point(self._length)
            self._queue.append((event, start, end))
            self._drain()
            self._check_next()

    def _on_error(self, error: Exception) -> None:
        with self._lock:
            if self._over:
                return
            self._over = True
            observer = self._observer
        if observer is not None:
            observer.on_error(error)
        self._let_go()

    def _on_completed(self) -> None:
        with self._lock:
            self._completed = True
            self._drain()

    def _stop(self) -> None:
        with self._lock:
            self._over = True
            self._queue.clear()
        self._let_go()

    def _let_go(self) -> None:
        """The run ended: drop what refers back to it (the source's subscription holds the
        run's steps, which hold this guard; the checks' observers hold it too), so reference
        counting frees the run and no cycle is left for the collector."""
        with self._lock:
            self._source, self._observer = None, None
            self._waiters = []
            self._pieces = []
        self._checks.dispose()

    # -- the steps of the run's loop ----------------------------------------------------------

    def begin(self, question: str, history: Sequence[Message]) -> Observable[Any]:
        """The step before round 1: ``guardrail_started`` per input guardrail, whose checks
        start now and go on while the run does."""

        def subscribe(
            observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            for guardrail in self._inputs:
                observer.on_next(GuardrailStarted(round=1, guardrail=guardrail_name(guardrail)))
            for guardrail in self._inputs:
                self._run(guardrail, (question, tuple(history)), self._input_passed)
            observer.on_completed()
            return Disposable()

        return Observable(subscribe)

    def settled(self) -> Observable[Any]:
        """The step before the run commits: completes once every check so far has passed."""

        def subscribe(
            observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            with self._lock:
                done = self._is_settled()
                if not done:
                    self._waiters.append(observer)
            if done:
                observer.on_completed()
            return Disposable()

        return Observable(subscribe)

    # -- text, holding and releasing (under the lock) -----------------------------------------

    def _take_text(self, delta: str) -> int:
        """Add ``delta`` to the answer text; mark the last sentence end it completes."""
        before = self._length
        self._pieces.append(delta)
        self._length += len(delta)
        if self._outputs:
            window = self._tail + delta
            end = sentence_ends(window)
            if end is not None:
                self._point(before - len(self._tail) + end)
            self._tail = window[-_TAIL:]
        return self._length

    def _point(self, offset: int) -> None:
        last = self._points[-1][0] if self._points else self._approved
        if offset > max(last, self._round_start):
            self._points.append((offset, self._round_start))

    def _drain(self) -> None:
        """Deliver what no longer needs to wait, in order."""
        observer = self._observer
        queue = self._queue
        while queue and observer is not None and not self._over:
            event, start, end = queue[0]
            if end >= 0:
                if self._inputs_left:
                    return
                if self._hold_sentences and end > self._approved:
                    if start >= self._approved:
                        return
                    cut = self._approved - start  # the checked part goes, the rest waits
                    head = TextDelta(round=event.round, delta=event.delta[:cut])
                    queue[0] = (
                        TextDelta(round=event.round, delta=event.delta[cut:]),
                        start + cut,
                        end,
                    )
                    self._released = self._approved
                    observer.on_next(head)
                    continue
                self._released = end
            queue.popleft()
            observer.on_next(event)
        if self._completed and not queue and not self._over:
            self._over = True
            if observer is not None:
                observer.on_completed()
            self._let_go()

    # -- checks -------------------------------------------------------------------------------

    def _check_next(self) -> None:
        """Start the output check of the latest sentence end of the first round waiting."""
        if self._checking or not self._points:
            return
        round_start = self._points[0][1]
        same = [p for p in self._points if p[1] == round_start]
        offset = same[-1][0]
        self._points = self._points[len(same) :]
        self._checking = True
        text = "".join(self._pieces)[round_start:offset]
        left = [len(self._outputs)]

        def passed(_: Any) -> None:
            left[0] -= 1
            if left[0]:
                return
            self._checking = False
            self._approved = max(self._approved, offset)
            self._drain()
            self._check_next()

        for guardrail in self._outputs:
            self._run(guardrail, (text,), passed, kind="output")

    def _input_passed(self, guardrail: Any) -> None:
        self._inputs_left -= 1
        observer = self._observer
        if observer is not None:  # now, ahead of the text it held
            observer.on_next(GuardrailPassed(round=1, guardrail=guardrail_name(guardrail)))
        self._drain()
        self._check_next()

    def _run(
        self,
        guardrail: Any,
        args: tuple[Any, ...],
        on_pass: Callable[[Any], None],
        kind: str = "input",
    ) -> None:
        """Call ``guardrail(*args)``; on a pass call ``on_pass(guardrail)`` under the lock."""
        name = guardrail_name(guardrail)

        answer: list[Any] = []

        def on_next(result: Any) -> None:
            answer.append(result)

        def on_completed() -> None:
            # Acted on at completion, not on the value: a span around the check ends first.
            result = answer[0] if answer else None
            with self._lock:
                if self._over:
                    return
                if not isinstance(result, GuardrailResult):
                    reason = f"it returned {type(result).__name__}, not a GuardrailResult"
                    self._trip(name, reason, kind)
                elif result.tripped:
                    self._trip(name, result.reason, kind)
                else:
                    on_pass(guardrail)
                    self._wake()

        def on_error(error: Exception) -> None:
            with self._lock:
                if not self._over:
                    self._trip(name, f"it failed ({type(error).__name__}: {error})", kind)

        check = call_once(guardrail, args, {}, CancellationToken(), self._scheduler)
        if self._trace is not None:
            check = self._trace.guardrail(name, kind, check)
        self._checks.add(check.subscribe(on_next, on_error, on_completed))

    def _trip(self, name: str, reason: str, kind: str) -> None:
        """End the run: ``guardrail_tripped``, then the error; nothing that waited goes out."""
        self._over = True
        self._queue.clear()
        observer = self._observer
        withdrawn = ""
        if kind == "output" and self._released > self._round_start:
            withdrawn = "".join(self._pieces)[self._round_start : self._released]
        source, self._source = self._source, None
        if source is not None:
            source.dispose()
        if observer is not None:
            observer.on_next(
                GuardrailTripped(
                    round=self._round,
                    guardrail=name,
                    kind="output" if kind == "output" else "input",
                    reason=reason,
                    withdrawn=withdrawn,
                )
            )
            observer.on_error(GuardrailTrippedError(name, reason, kind))
        self._let_go()

    def _is_settled(self) -> bool:
        return not (self._inputs_left or self._checking or self._points)

    def _wake(self) -> None:
        if self._waiters and self._is_settled():
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                waiter.on_completed()
