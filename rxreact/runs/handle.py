"""``AgentRun``: the handle of a hot run, started by ``agent.start(question)``."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, cast

from reactivex import Observable, abc
from reactivex.disposable import SingleAssignmentDisposable
from reactivex.scheduler import VirtualTimeScheduler

from rxreact.errors import RunCancelledError, RxReactError
from rxreact.events import AgentEvent, FinalAnswer
from rxreact.runs.checkpoints import Checkpointer, CheckpointWriter
from rxreact.runs.parking import PARKED_LEASE_TTL, ParkingWriter, ParkWatch
from rxreact.runs.takeover import LostRun, ResumableLog
from rxreact.tools.approval import ApprovalDecision

if TYPE_CHECKING:
    from rxreact.agent.react_agent import AgentResult, ReactAgent
    from rxreact.agent.run_loop import RunLoop

__all__ = ["AgentRun"]

log: logging.Logger = logging.getLogger(__name__)


class AgentRun:
    """A run that started at once and lives until it ends, whatever its subscribers do.

    Its events go to the agent's event log, numbered by ``seq``; every subscriber of
    :meth:`events` (or of :func:`rxreact.follow`, from any process with a shared log) is a
    cursor on that log. Made by :meth:`ReactAgent.start <rxreact.ReactAgent.start>`.

    ::

        run = agent.start("Weather in Paris?", conversation_id="c1")
        run.events().subscribe(print)                  # live, replaying what it missed
        run.events(after=41).subscribe(resume)          # a reconnecting client
        answer = run.result(timeout=60).answer
    """

    def __init__(
        self, agent: ReactAgent[Any], run: RunLoop, *, lost: LostRun | None = None
    ) -> None:
        self.id: str = run.run_id
        """The run's id: pass it to :func:`rxreact.follow` (from any process, with Redis)."""
        self.conversation_id: str | None = run.conversation_id
        """The conversation the run reads and extends, if any."""
        self._agent = agent
        self._run = run
        self._log = agent.event_log
        self._future: Future[AgentResult] = Future()
        self._final: FinalAnswer | None = None
        self._lock = threading.Lock()
        self._over = False
        self._subscription = SingleAssignmentDisposable()
        if lost is None:
            self._writer = self._log.begin(self.id, self.conversation_id, self.cancel)
            self._append: Callable[[Any], None] = self._writer.append
        else:  # taken over (rxreact.agent.resume): seq goes on after the lost owner's last
            assert isinstance(self._log, ResumableLog)
            self._writer = self._log.resume(lost, self.cancel)
            self._append = _renumbered(self._writer.append, lost.last_seq)
            self._final = lost.final_answer  # answered before it was lost: the steps add none
        if isinstance(self._writer, CheckpointWriter):  # a durable log: record each step
            run.checkpoints = Checkpointer(self._writer)
        self._park = _park_watch(agent, self._writer, lost)
        self._held = False  # the conversation is held for as long as the run is parked
        watch = getattr(self._log, "watch_decisions", None)
        if watch is not None:  # decisions made in other processes (event_log.decide)
            watch(self.id, self._apply_decision)
        # This handle answers approval requests (approve / deny), so nobody denies them for
        # want of an approver; an agent's approver, if any, may still answer first.
        run.approvals.external = True
        self._subscription.disposable = agent._subscribe(
            run, self._on_next, self._on_error, self._on_completed
        )

    def __repr__(self) -> str:
        state = "done" if self.done else "running"
        return f"AgentRun(id={self.id!r}, conversation_id={self.conversation_id!r}, {state})"

    @property
    def parked(self) -> bool:
        """True while the run waits only for approvals and its durable log has it parked
        (it needs no process then: see docs/runs.md, "Parked runs")."""
        writer = self._writer
        return isinstance(writer, ParkingWriter) and writer.parked

    @property
    def done(self) -> bool:
        """True once the run completed, failed or was cancelled."""
        return self._future.done()

    def events(self, after: int = 0) -> Observable[AgentEvent]:
        """The run's events with ``seq > after``, then the live ones; any number of subscribers.

        ::

            run:          -1-2-3-4-5-F|
            events():     (123)-4-5-F|     subscribed after 3: replayed, then live
            events(4):    -----------5-F|

        Completes after ``final_answer``; errors with the run's error
        (:class:`~rxreact.RunCancelledError` after :meth:`cancel`). Works after the run ended,
        within the log's retention. Disposing a subscription detaches that subscriber only.
        Events arrive on the agent's scheduler unless you subscribe with another.
        """
        source = self._log.read(self.id, after)
        default = self._agent.scheduler

        def subscribe(
            observer: abc.ObserverBase[AgentEvent], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            return source.subscribe(observer, scheduler=scheduler or default)

        return Observable(subscribe)

    def cancel(self) -> None:
        """Stop the run as disposing a cold ``stream()`` does: the HTTP stream is closed, running
        tools' tokens are set, nothing is written to memory. Subscribers and :meth:`result` get
        :class:`~rxreact.RunCancelledError`. No-op once the run ended."""
        if not self._claim():
            return
        self._subscription.dispose()
        error = RunCancelledError(f"run {self.id} was cancelled")
        self._future.set_exception(error)
        self._writer.end(error)

    def approve(self, call_id: str) -> bool:
        """Let a tool call that waits for approval (``tool_approval_requested``) run.

        Callable from any thread, even from a subscriber seeing the request; the call goes on
        on the run's scheduler. Returns False when no call with that id waits (it was decided,
        timed out, or the run ended).
        """
        return self._decide(call_id, ApprovalDecision(approved=True))

    def deny(self, call_id: str, reason: str | None = None) -> bool:
        """Refuse a tool call that waits for approval: it never runs, and the model reads that
        it was denied (with ``reason``). Returns False when no call with that id waits."""
        return self._decide(call_id, ApprovalDecision(approved=False, reason=reason))

    def _decide(self, call_id: str, decision: ApprovalDecision) -> bool:
        approvals = self._run.approvals
        writer = self._writer
        if not isinstance(writer, ParkingWriter):
            return approvals.settle(call_id, decision)
        if call_id not in approvals.pending():
            return False
        # If parked (or being unparked), the log must stop saying so before the call runs
        # (rxreact.runs.parking); if not, unpark answers at once, here.
        settled: list[bool] = []

        def unparked(committed: bool) -> None:
            if not committed:
                log.warning("run %s: not resumed here (another process owns it now)", self.id)
                settled.append(False)
            else:
                settled.append(approvals.settle(call_id, decision))

        writer.unpark(unparked)
        return settled[0] if settled else True  # answered at once, or once it is written

    def _apply_decision(self, call_id: str, approved: bool, reason: str | None) -> None:
        applied = self.approve(call_id) if approved else self.deny(call_id, reason)
        if not applied:  # settled meanwhile (timed out, or the run ended)
            log.warning("run %s: a decision for call %s came too late", self.id, call_id)

    def result(self, timeout: float | None = None) -> AgentResult:
        """Wait for the run's :class:`~rxreact.AgentResult` (blocking).

        Raises:
            RxReactError: whatever ended the run (:class:`~rxreact.RunCancelledError` if
                cancelled).
            TimeoutError: ``timeout`` seconds passed first (the run goes on).
        """
        scheduler = self._agent.scheduler
        if isinstance(scheduler, VirtualTimeScheduler) and not self.done:
            # Waiting on virtual time means advancing it (as ReactAgent.run does).
            VirtualTimeScheduler.start(scheduler)
        return self._future.result(timeout)

    async def aresult(self) -> AgentResult:
        """Await the run's :class:`~rxreact.AgentResult`; cancelling the await leaves the run
        running."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[AgentResult] = loop.create_future()

        def settle(done: Future[AgentResult]) -> None:
            def copy() -> None:
                if waiter.done():
                    return
                error = done.exception()
                if error is None:
                    waiter.set_result(done.result())
                else:
                    waiter.set_exception(error)

            with contextlib.suppress(RuntimeError):  # the loop closed: no one awaits any more
                loop.call_soon_threadsafe(copy)

        # Not asyncio.wrap_future: cancelling its future would cancel ours, i.e. the outcome.
        self._future.add_done_callback(settle)
        return await waiter

    # -- the run's output (serialized: one call at a time, in seq order) ----------------------

    def _on_next(self, event: Any) -> None:
        if type(event) is FinalAnswer and not event.path:  # not an agent tool's
            self._final = event
        park = self._park
        if park is not None:
            parks = park.see(event)
            if parks or self._held:
                self._parking(parks)
        self._append(event)

    def _parking(self, parks: bool) -> None:
        """Park the run when the event just seen leaves it waiting only for people (``parks``),
        holding its conversation meanwhile; give the conversation its usual lease once it goes
        on. Not called for the other events (a chunk pays one ``see``)."""
        writer = cast(ParkingWriter, self._writer)  # the watch exists only for such writers
        if parks:
            timeout = self._agent.approval_timeout
            deadline = None if timeout is None else time.time() + timeout
            writer.park(deadline)
            self._hold(PARKED_LEASE_TTL if timeout is None else timeout + self._agent.lease_ttl)
        elif self._held and not writer.parked:
            self._hold(None)

    def _hold(self, ttl: float | None) -> None:
        self._held = ttl is not None
        try:
            self._run.hold_conversation(ttl)
        except RxReactError as error:  # it is held for lease_ttl after the last renewal instead
            log.warning("run %s: could not hold its conversation: %s", self.id, error)

    def _on_error(self, error: Exception) -> None:
        if self._claim():
            self._future.set_exception(error)
            self._writer.end(error)

    def _on_completed(self) -> None:
        if self._claim():
            assert self._final is not None  # the steps always end with final_answer
            self._future.set_result(self._run.result(self._final))
            self._writer.end(None)

    def _claim(self) -> bool:
        """True for the first of completion, failure and cancel: it alone ends the run."""
        with self._lock:
            if self._over:
                return False
            self._over = True
            return True


def _park_watch(agent: ReactAgent[Any], writer: Any, lost: LostRun | None) -> ParkWatch | None:
    """A watch when the run may park: a parking log, approvals that come from outside (an
    ``approver=`` lives in this process), and a tool that may ask."""
    if not isinstance(writer, ParkingWriter) or agent.approver is not None:
        return None
    if not any(tool.requires_approval for tool in agent.tools.values()):
        return None
    watch = ParkWatch()
    for event in lost.events if lost is not None else ():  # where the lost owner left it
        watch.see(event)
    return watch


def _renumbered(append: Callable[[AgentEvent], None], offset: int) -> Callable[[Any], None]:
    """``append`` for a resumed run: its output counts from 1, the log goes on from
    ``offset``."""

    def renumber(event: Any) -> None:
        event.__dict__["seq"] += offset  # as RunOutput stamps it (a frozen model's field)
        append(event)

    return renumber
