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
    a restart:     -R-a-.-b-X-R-c-.-F-|             X round_restarted (a fallback model answers)
    hold=sentence: -R-------X-R-----c.F-|           a . b were void: dropped, their check forgotten

A trip ends the run: ``guardrail_tripped``, then ``on_error`` with
:class:`~rxreact.GuardrailTrippedError`; the source is disposed at once (model stream closed,
running tools' tokens set) and what waited is dropped. ``settled`` is the step before the run
commits its turn: it completes once every check has passed, so a run that trips stores
nothing. Guardrails run on the tools scheduler (sync), rxreact's I/O loop (``async def``), or
as the Observable they return, so a ``TestScheduler`` runs them in virtual time.

Only the run's own events are held or checked; those of agents it calls as tools (a non-empty
``path``) pass in order like any other event.

The text and its check offsets are :mod:`~rxreact.operators._answer_text`'s, one check
:mod:`~rxreact.operators._guardrail_check`'s; what remains is one class past 300 lines because
holding, releasing and tripping read and change the same state under one lock.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from rxreact.checks.guardrails import Hold, guardrail_name
from rxreact.errors import GuardrailTrippedError
from rxreact.events import (
    GuardrailPassed,
    GuardrailStarted,
    GuardrailTripped,
    RoundFinished,
    RoundRestarted,
    RoundStarted,
    TextDelta,
)
from rxreact.messages import Message
from rxreact.operators._answer_text import AnswerText
from rxreact.operators._guardrail_check import check_guardrail
from rxreact.rx._fused import Fused, subscribe_fused
from rxreact.tracing import RunTracer

__all__ = ["RunGuard"]


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
        self._text = AnswerText(bool(outputs))
        self._released = 0  # text delivered so far
        self._approved = 0  # text every output guardrail passed
        self._checking = False
        self._epoch = 0  # bumped by a restart: the verdicts of checks begun before it are void

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
                text = self._text
                if kind is TextDelta:
                    start, end = text.length, text.add(event.delta, self._approved)
                elif kind is RoundStarted:
                    self._round, text.round_start = event.round, text.length
                elif kind is RoundRestarted:
                    self._void_round()
                elif kind is RoundFinished and self._outputs and text.length > text.round_start:
                    text.mark(text.length, self._approved)
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
            self._text.clear()
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

    # -- holding and releasing (under the lock) ----------------------------------------------

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

    def _void_round(self) -> None:
        """The round starts over on another model: its text so far is void. What of it still
        waits is dropped rather than shown late (the restart withdraws what was shown), and its
        checks are forgotten: a verdict on void text neither trips the run nor approves the
        text that replaces it."""
        self._queue = deque(item for item in self._queue if item[2] < 0)
        self._text.void_round()
        self._epoch += 1
        self._checking = False
        self._wake()

    # -- checks -------------------------------------------------------------------------------

    def _check_next(self) -> None:
        """Start the output check of the latest sentence end of the first round waiting."""
        if self._checking or not self._text.points:
            return
        text, offset = self._text.next_check()
        self._checking = True
        left = [len(self._outputs)]
        epoch = self._epoch

        def passed(_: Any) -> None:
            left[0] -= 1
            if left[0]:
                return
            self._checking = False
            self._approved = max(self._approved, offset)
            self._drain()
            self._check_next()

        for guardrail in self._outputs:
            self._run(guardrail, (text,), passed, kind="output", epoch=epoch)

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
        epoch: int | None = None,
    ) -> None:
        """Check ``guardrail(*args)``; on a pass call ``on_pass(guardrail)`` under the lock.
        An output check begun in an earlier ``epoch`` (before a restart) is not acted on."""
        name = guardrail_name(guardrail)

        def verdict(reason: str | None) -> None:
            with self._lock:
                if self._over or (epoch is not None and epoch != self._epoch):
                    return
                if reason is not None:
                    self._trip(name, reason, kind)
                else:
                    on_pass(guardrail)
                    self._wake()

        self._checks.add(
            check_guardrail(guardrail, args, kind, self._scheduler, self._trace, verdict)
        )

    def _trip(self, name: str, reason: str, kind: str) -> None:
        """End the run: ``guardrail_tripped``, then the error; nothing that waited goes out."""
        self._over = True
        self._queue.clear()
        observer = self._observer
        withdrawn = ""
        if kind == "output" and self._released > self._text.round_start:
            withdrawn = self._text.text(self._text.round_start, self._released)
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
        return not (self._inputs_left or self._checking or self._text.points)

    def _wake(self) -> None:
        if self._waiters and self._is_settled():
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                waiter.on_completed()
