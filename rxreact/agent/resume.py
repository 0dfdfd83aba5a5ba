"""Resuming lost runs: ``agent.resume_runs()`` and ``agent.runs_keeper()``.

A run on a durable log whose process died is claimed by exactly one other process
(:mod:`rxreact.runs.takeover`) and goes on there, where it stopped::

    lost run's log:  1 .. 41 (last committed event)   checkpoints: start, response r1, tool a
    resumed:         42 round_restarted? ... final_answer       (seq goes on, none repeated)

- nothing a checkpoint recorded is done again: no finished model response is requested
  again, no tool call with a recorded result runs again;
- a tool call that was asked for but has no recorded result runs again only if its tool is
  ``idempotent``; otherwise it gets an error result the model reads (:data:`MAY_HAVE_RUN`);
- a round that was streaming is requested again after one ``round_restarted`` event, so
  followers withdraw what they showed of it;
- a run this agent cannot run (another agent's name, other tools, a corrupt checkpoint) is
  given up with that reason: its followers get :class:`~rxreact.RunLostError` saying it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from reactivex import Observable

from rxreact.agent import _checkpointing as checkpointing
from rxreact.agent._conversation import LeaseTerms
from rxreact.agent._rebuild import Rebuilt, Refused, rebuild
from rxreact.agent._run_setup import setup_step
from rxreact.agent.round import RoundState
from rxreact.agent.run_loop import RunLoop
from rxreact.events import (
    MaxRoundsReached,
    RoundRestarted,
    ToolApprovalRequested,
    ToolExecutionStarted,
    ToolResult,
    UsagePurpose,
)
from rxreact.messages import ToolCall, Usage, content_text
from rxreact.model.chunks import ChatChunk
from rxreact.runs.checkpoints import Checkpoint
from rxreact.runs.handle import AgentRun
from rxreact.runs.takeover import LostRun, ResumableLog
from rxreact.rx._immediate import immediately
from rxreact.tools.approval import ApprovalDecision
from rxreact.tools.run_context import RunInfo, check_deps

if TYPE_CHECKING:
    from rxreact.agent.react_agent import ReactAgent

__all__ = ["MAY_HAVE_RUN", "PAST_DEADLINE", "RunsKeeper", "resume_runs"]

log: logging.Logger = logging.getLogger(__name__)

MAY_HAVE_RUN = (
    "The call may or may not have taken effect; the worker running it stopped before its "
    "result was recorded, and this tool is not marked safe to run twice."
)
"""The error result of a call that was interrupted and is not ``idempotent``."""

PAST_DEADLINE = "no decision before the approval deadline (approval_timeout)"
"""Why a parked call that nobody decided in time was denied (the model reads it)."""

_WORKER = f"{socket.gethostname()}/{os.getpid()}"


def agent_name(agent: Any) -> str | None:
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) else None


def resume_runs(agent: ReactAgent[Any]) -> list[AgentRun]:
    """Claim the lost runs of ``agent.event_log`` and resume those this agent can run."""
    event_log = agent.event_log
    if not isinstance(event_log, ResumableLog):
        return []
    resumed: list[AgentRun] = []
    for lost in event_log.claim_lost():
        try:
            state = rebuild(lost, agent_name(agent), list(agent.tools))
            deps = resumed_deps(agent, lost, state)
        except Refused as refused:
            log.warning("run %s cannot be resumed here: %s", lost.run_id, refused.reason)
            event_log.give_up(lost, refused.reason)
            continue
        run = ResumedRun(agent, lost, state, deps)
        resumed.append(AgentRun(agent, run, lost=lost))
        log.info("resumed run %s after seq %d", lost.run_id, lost.last_seq)
    return resumed


def resumed_deps(agent: ReactAgent[Any], lost: LostRun, state: Rebuilt) -> Any:
    """The deps of a run resumed here: made by the agent's ``deps_factory`` (deps are never
    stored with a run); ``None`` for a run that had none.

    Raises:
        Refused: the run had deps and this agent has no factory, or the factory failed or
            made deps of the wrong type; the run is given up, none of its tools run here.
    """
    factory = agent.deps_factory
    if factory is None:
        if state.deps:
            raise Refused(
                f"run {lost.run_id!r} was given deps, which are not stored with a run, and "
                f"the agent resuming it has no deps_factory to make them "
                f"(ReactAgent(deps_factory=fn))"
            )
        return None
    info = RunInfo(lost.run_id, state.conversation_id, agent.name, state.user)
    try:
        deps = factory(info)
        check_deps(agent.deps_type, deps)
    except Exception as error:
        raise Refused(
            f"the deps_factory failed for run {lost.run_id!r}: {type(error).__name__}: {error}"
        ) from error
    return deps


class ResumedRun(RunLoop):
    """A run rebuilt from its checkpoints; its steps start where the lost owner stopped."""

    def __init__(
        self, agent: ReactAgent[Any], lost: LostRun, state: Rebuilt, deps: Any = None
    ) -> None:
        super().__init__(agent, state.question.content, state.conversation_id, deps=deps)
        self.user: str | None = state.user
        self.run_id: str = lost.run_id
        self._lost = lost
        self._state = state

    def _lease_terms(self) -> LeaseTerms:
        """Take the lost owner's recorded lease over at once (its commit is fenced out from
        then on, should it only have been paused). When the lease was granted again since, or
        the memory cannot hand leases over, wait for the conversation like any run, however
        long: the lost owner's lease lapses on its own."""
        return LeaseTerms(f"{_WORKER}/{self.run_id}", "queue", None, self._state.lease)

    def _leased(self) -> None:
        """Record the new lease, for whoever resumes the run after this process."""
        if self.checkpoints is not None:
            checkpointing.lease(self, self.checkpoints)

    def _steps(self) -> Iterator[Observable[Any]]:
        state = self._state
        self._load_history()
        self._add(state.question)
        for message in state.turn:
            self._add(message)
        self.rounds: int = state.rounds
        self.usage: Usage | None = state.usage
        self.usage_by_purpose.update(cast(dict[UsagePurpose, Usage], state.usage_by_purpose))
        self.revisions: int = state.revisions
        self.tool_errors: int = state.tool_errors
        setup = setup_step(self, self.agent)  # instructions and tools, with this process's deps
        if setup is not None:
            yield setup
        if self.guard is not None:  # input guardrails are checks, not effects: run them again
            yield self.guard.begin(content_text(self.question), self.history[: self.loaded])
        last = state.last
        if last is not None and not last.tool_calls:  # the answer was recorded: no new request
            if self._lost.final_answer is not None:
                return  # the lost owner got as far as its answer: nothing is left but the end
            answered = RoundState(state.rounds, forced=state.forced)
            answered.process(ChatChunk(text=last.content or ""), lambda _: None)
            if self.checked:
                yield self._check(answered)
                if self._revise():
                    if self.checkpoints is not None:
                        checkpointing.note(self, self.checkpoints, answered.round)
                    if self.output is not None:
                        yield immediately(self._output_reset(answered.round))
                    yield from self._rounds(self._restart(), answered.forced)
                    return
                self._check_output_type(answered)
            if self.guard is not None:
                yield self.guard.settled()
            if not self._turn_stored():
                self._commit_memory()
            yield immediately(self._final_answer(answered))
            return
        forced = state.forced
        prefix: tuple[Any, ...] = ()
        if last is not None:
            yield from self._finish_tools(last.tool_calls, state.results)
            if self.rounds - self.round_base >= self.agent.max_rounds:
                forced = True
                if not any(type(e) is MaxRoundsReached for e in self._lost.events):
                    prefix = (MaxRoundsReached(round=self.rounds),)
        yield from self._rounds(prefix + self._restart(), forced)

    def _turn_stored(self) -> bool:
        """Whether the memory already ends with this run's turn: the lost owner committed it
        and died before its ``final_answer`` reached the log. Held by this run's lease from its
        start, the conversation cannot have had another turn appended since."""
        if self.loaded < len(self.turn):
            return False
        stored = self.history[self.loaded - len(self.turn) : self.loaded]
        return [_said(m) for m in stored] == [_said(m) for m in self.turn]

    def _restart(self) -> tuple[Any, ...]:
        """``round_restarted`` when the log holds events of the round requested next."""
        number = self.rounds + 1
        if any(e.round == number for e in self._lost.events):
            reason = f"the worker running this round stopped; resumed by {_WORKER}"
            return (RoundRestarted(round=number, reason=reason),)
        return ()

    def _finish_tools(
        self, calls: tuple[ToolCall, ...], recorded: dict[str, ToolResult]
    ) -> Iterator[Observable[Any]]:
        """The round's tool calls that have no recorded result: idempotent ones run again,
        the others get :data:`MAY_HAVE_RUN`; recorded results whose event never reached the
        log are sent now. Then every result is added, in call order, and recorded."""
        agent, durable, lost = self.agent, self.checkpoints, self._lost
        round_number = self.rounds
        shown = {e.call_id for e in lost.events if type(e) is ToolResult}
        waiting = _waiting_for_approval(lost)
        results: list[ToolResult | None] = [recorded.get(call.id) for call in calls]
        unsent = [r for r in results if r is not None and r.call_id not in shown]
        again: list[tuple[int, ToolCall]] = []
        refused: list[ToolResult] = []
        for position, call in enumerate(calls):
            if results[position] is not None:
                continue
            if call.id in waiting:  # parked: it never began; its decision (if any) goes on
                self.approvals.resume(call.id, _decision(lost, call.id))
                again.append((position, call))
                continue
            tool = agent.tools.get(call.name)
            if tool is not None and tool.idempotent:
                again.append((position, call))
                continue
            result = ToolResult(
                round=round_number,
                call_id=call.id,
                name=call.name,
                content=MAY_HAVE_RUN,
                is_error=True,
                duration_s=0.0,
            )
            results[position] = result
            refused.append(result)
        if durable is not None:  # the refusals are results too (recorded ones are already)
            for result in refused:
                durable.record(Checkpoint(kind="tool", round=round_number, result=result))
        yield immediately(*unsent, *refused)
        if durable is not None and lost.parked:  # the log stops saying "parked" before any call
            durable.unpark()
            yield durable.written()
        if again:
            fresh: list[ToolResult | None] = [None] * len(again)
            yield self._run_calls([call for _, call in again], round_number, fresh)
            for (position, _), done in zip(again, fresh, strict=True):
                results[position] = done
        # Recorded results were counted when rebuilt; _add_results counts them all again.
        self.tool_errors -= sum(r.is_error for r in recorded.values())
        self._add_results(calls, results)
        if durable is not None:
            yield durable.written()


def _said(message: Any) -> tuple[Any, ...]:
    """What a message says, as the memory keeps it (ids included: a tool call's make a turn
    with tools unique)."""
    calls = tuple(c.id for c in getattr(message, "tool_calls", None) or ())
    return (message.role, content_text(message.content or ""), calls)


def _waiting_for_approval(lost: LostRun) -> set[str]:
    """The calls of a parked run that asked for approval and never began (nothing of a run
    happens while it is parked, so for a run that was running this is empty)."""
    if not lost.parked:
        return set()
    asked = {e.call_id for e in lost.events if type(e) is ToolApprovalRequested and not e.path}
    begun = {e.call_id for e in lost.events if isinstance(e, (ToolExecutionStarted, ToolResult))}
    return asked - begun


def _decision(lost: LostRun, call_id: str) -> ApprovalDecision | None:
    """The decision recorded while no process held the run; past the deadline, a denial."""
    recorded = lost.decisions.get(call_id)
    if recorded is not None:
        approved, reason = recorded
        return ApprovalDecision(approved=approved, reason=reason)
    if lost.deadline is not None and time.time() >= lost.deadline:
        return ApprovalDecision(approved=False, reason=PAST_DEADLINE)
    return None


class RunsKeeper:
    """Calls ``agent.resume_runs()`` now and then every ``interval`` seconds, on a thread of
    its own, until :meth:`close`. Made by ``with agent.runs_keeper():``."""

    def __init__(self, agent: ReactAgent[Any], interval: float | None = None) -> None:
        event_log = agent.event_log
        lost_after = event_log.lost_after if isinstance(event_log, ResumableLog) else 30.0
        self.interval: float = interval if interval is not None else lost_after / 3
        self.resumed: list[AgentRun] = []
        """Every run this keeper resumed, oldest first."""
        self._agent = agent
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rxreact-runs-keeper", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            try:
                self.resumed.extend(resume_runs(self._agent))
            except Exception:  # a passing failure of the log: try again at the next tick
                log.exception("resuming lost runs failed")
            if self._stop.wait(self.interval):
                return

    def close(self) -> None:
        """Stop looking for lost runs (runs already resumed go on)."""
        self._stop.set()
        self._thread.join(10)

    def __enter__(self) -> RunsKeeper:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
