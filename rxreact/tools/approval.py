"""Approval before a tool runs: ``@tool(requires_approval=True)``.

A call that needs approval emits ``tool_approval_requested`` and waits, holding no thread,
for a decision::

    calls:      (a)|
    a:          Q-----------(approve a)--S--r|     Q: tool_approval_requested
                Q-----------(deny a)-----d|        S: tool_execution_started, r: tool_result
                                                   d: tool_result "denied" (the tool never ran)

The decision comes from the agent's ``approver=`` callback (cold streams) or from
``approve(call_id)`` / ``deny(call_id, reason)`` on the run's :class:`Approvals` (what a hot
run's handle, ``run.approve`` / ``run.deny``, calls). A denial becomes the call's result, so
the model reads it and the history stays valid; so does a wait longer than
``approval_timeout``. Disposing the run while it waits cancels it like any other dispose.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeAlias

from pydantic import BaseModel, ConfigDict
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import CompositeDisposable, Disposable
from reactivex.subject import AsyncSubject

from rxreact.events import ToolApprovalRequested
from rxreact.model.http._aio import io_loop

__all__ = ["ApprovalDecision", "Approvals", "Approver"]


class ApprovalDecision(BaseModel):
    """Whether a tool call may run; ``reason`` is what the model reads on a denial."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    approved: bool
    """True: the call runs; False: it does not, and the model reads that it was denied."""
    reason: str | None = None
    """Why it was denied, for the model (ignored on approval)."""


Approver: TypeAlias = Callable[
    [ToolApprovalRequested],
    "bool | ApprovalDecision | Awaitable[bool | ApprovalDecision] | "
    "Observable[bool | ApprovalDecision]",
]
"""Decides on a request: returns (or resolves to) ``True``/``False`` or an
:class:`ApprovalDecision`. A sync approver runs on the tools scheduler, an ``async def`` on
rxreact's I/O loop, an Observable's first value counts. If it raises, the call is denied."""


class Approvals:
    """The approvals a run is waiting for, by tool call id.

    Args:
        approver: decides every request (``None``: ``approve``/``deny`` decide, if
            ``external``; else the request is denied at once: nobody could answer it).
        scheduler: where sync approvers run and decisions are delivered.
        external: ``approve``/``deny`` will be called (a hot run with a handle).
    """

    def __init__(
        self, approver: Approver | None, scheduler: abc.SchedulerBase, external: bool = False
    ) -> None:
        self.approver = approver
        self.scheduler = scheduler
        self.external = external
        self._pending: dict[str, AsyncSubject[ApprovalDecision]] = {}
        self._asked: set[str] = set()  # resumed calls: asked by the process that owned the run
        self._known: dict[str, ApprovalDecision] = {}  # ... and decided while none held it
        self._lock = threading.Lock()

    @property
    def waiting(self) -> int:
        """How many calls wait for a decision now (a run waiting for a person is not stalled)."""
        return len(self._pending)

    def pending(self) -> list[str]:
        """The call ids waiting for a decision."""
        with self._lock:
            return list(self._pending)

    def approve(self, call_id: str) -> bool:
        """Let the call run. Returns False when no call with that id is waiting."""
        return self._decide(call_id, ApprovalDecision(approved=True))

    def settle(self, call_id: str, decision: ApprovalDecision) -> bool:
        """Apply ``decision`` to the call. Returns False when no call with that id waits."""
        return self._decide(call_id, decision)

    def deny(self, call_id: str, reason: str | None = None) -> bool:
        """Refuse the call; ``reason`` is given to the model. False when none is waiting."""
        return self._decide(call_id, ApprovalDecision(approved=False, reason=reason))

    def resume(self, call_id: str, decision: ApprovalDecision | None = None) -> None:
        """A call of a run taken over from another process, which asked for it already: it is
        not announced again (:meth:`asked`), and ``decision``, made while no process held the
        run, answers it as soon as it waits."""
        with self._lock:
            self._asked.add(call_id)
            if decision is not None:
                self._known[call_id] = decision

    def asked(self, call_id: str) -> bool:
        """True for a call whose ``tool_approval_requested`` an earlier owner emitted."""
        return call_id in self._asked

    def _decide(self, call_id: str, decision: ApprovalDecision) -> bool:
        with self._lock:
            subject = self._pending.pop(call_id, None)
        if subject is None:
            return False

        def deliver(_: abc.SchedulerBase, __: Any = None) -> None:
            subject.on_next(decision)
            subject.on_completed()

        # Not on the caller's thread (a web handler calling run.approve): the call goes on, and
        # its events are delivered, on the run's scheduler, as every other event of the run.
        self.scheduler.schedule(deliver)
        return True

    def decision(self, request: ToolApprovalRequested) -> Observable[ApprovalDecision]:
        """The decision on ``request``, once. The call is waiting from the moment this is
        called (so an ``approve`` that comes before the subscription still counts);
        disposing the subscription withdraws it."""
        subject: AsyncSubject[ApprovalDecision] = AsyncSubject()
        with self._lock:
            self._pending[request.call_id] = subject

        def withdraw() -> None:
            with self._lock:
                if self._pending.get(request.call_id) is subject:
                    del self._pending[request.call_id]

        def subscribe(
            observer: abc.ObserverBase[ApprovalDecision], _: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            subscription = subject.subscribe(observer)
            with self._lock:
                known = self._known.pop(request.call_id, None)
            if known is not None:
                self._decide(request.call_id, known)
                return CompositeDisposable(subscription, Disposable(withdraw))
            if self.approver is None:
                if not self.external:
                    reason = (
                        "no approver is configured (ReactAgent(approver=...)), so the call "
                        "was not run"
                    )
                    self._decide(request.call_id, ApprovalDecision(approved=False, reason=reason))
                return CompositeDisposable(subscription, Disposable(withdraw))
            asked = self._ask(request)
            return CompositeDisposable(subscription, asked, Disposable(withdraw))

        return Observable(subscribe)

    def _ask(self, request: ToolApprovalRequested) -> abc.DisposableBase:
        """Run the approver; its answer decides the call."""
        approver = self.approver
        assert approver is not None

        def settle(answer: Any) -> None:
            if isinstance(answer, ApprovalDecision):
                self._decide(request.call_id, answer)
            elif isinstance(answer, bool):
                self._decide(request.call_id, ApprovalDecision(approved=answer))
            else:
                reason = f"the approver answered {answer!r}, not a decision"
                self._decide(request.call_id, ApprovalDecision(approved=False, reason=reason))

        def refuse(error: BaseException) -> None:
            reason = f"the approver failed ({type(error).__name__}: {error})"
            self._decide(request.call_id, ApprovalDecision(approved=False, reason=reason))

        def run(_: abc.SchedulerBase, __: Any = None) -> abc.DisposableBase | None:
            try:
                answer = approver(request)
            except Exception as error:
                refuse(error)
                return None
            if isinstance(answer, Observable):
                # Subscribed on the agent's scheduler: timers in it run on its clock.
                return answer.pipe(ops.first()).subscribe(settle, refuse, scheduler=self.scheduler)
            if inspect.isawaitable(answer):
                future = asyncio.run_coroutine_threadsafe(_awaited(answer), io_loop())

                def on_done(f: Any) -> None:
                    if f.cancelled():
                        return
                    error = f.exception()
                    if error is not None:
                        refuse(error)
                    else:
                        settle(f.result())

                def cancel() -> None:
                    future.cancel()

                future.add_done_callback(on_done)
                return Disposable(cancel)
            settle(answer)
            return None

        return self.scheduler.schedule(run)


async def _awaited(answer: Awaitable[Any]) -> Any:
    return await answer
