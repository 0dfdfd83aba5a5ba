"""What a run on a durable event log records of its steps (:mod:`rxreact.runs.checkpoints`).

The run loop calls these only when its log can keep checkpoints (``run.checkpoints`` is set
by the hot run's handle); a cold ``stream()`` and the in-memory log never pay for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reactivex import Observable, abc

from rxreact.agent.round import RoundState
from rxreact.events import ToolResult
from rxreact.runs.checkpoints import Checkpoint, Checkpointer

if TYPE_CHECKING:
    from rxreact.agent.run_loop import RunLoop

__all__ = ["lease", "note", "record_tool_results", "response", "start"]


def _counters(run: RunLoop) -> dict[str, Any]:
    return {
        "usage": run.usage,
        "usage_by_purpose": dict(run.usage_by_purpose),
        "revisions": run.revisions,
    }


def _agent_name(run: RunLoop) -> str | None:
    name = getattr(run.agent, "name", None)
    return name if isinstance(name, str) else None


def start(run: RunLoop, checkpoints: Checkpointer) -> None:
    """Record the run's question and who can run it (no wait: nothing depends on it yet that
    a resume could repeat)."""
    checkpoints.record(
        Checkpoint(
            kind="start",
            messages=(run.turn[-1],),
            conversation_id=run.conversation_id,
            agent=_agent_name(run),
            tools=tuple(run.agent.tools),
            lease=run.lease,  # granted before the history was loaded, so known by now
            deps=run.deps is not None,
            user=run.user,
        )
    )


def lease(run: RunLoop, checkpoints: Checkpointer) -> None:
    """Record the conversation lease a resumed run just took (no wait: if it is lost with the
    process, the next one to resume the run waits for this lease to lapse instead)."""
    checkpoints.record(Checkpoint(kind="lease", lease=run.lease))


def response(run: RunLoop, checkpoints: Checkpointer, state: RoundState) -> Observable[Any]:
    """Record the round's assistant message (the last one added) and the counters; the
    step after it waits for the returned Observable (write-ahead)."""
    checkpoints.record(
        Checkpoint(
            kind="response",
            round=state.round,
            messages=(run.turn[-1],),
            forced=state.forced,
            agent=_agent_name(run),  # the agent running the turn now (another after a handoff)
            **_counters(run),
        )
    )
    return checkpoints.written()


def note(run: RunLoop, checkpoints: Checkpointer, round_number: int) -> None:
    """Record a message the run added between rounds (a judge's revision request)."""
    checkpoints.record(
        Checkpoint(kind="note", round=round_number, messages=(run.turn[-1],), **_counters(run))
    )


def record_tool_results(
    checkpoints: Checkpointer,
) -> Callable[[Observable[Any]], Observable[Any]]:
    """Pass a round's tool events through, recording each ``tool_result`` as it arrives (so
    a result survives even if a slower call of the same round is interrupted).

    ::

        tools:      -s1-s2--r1----r2-|
        recorded:   --------r1----r2
        output:     -s1-s2--r1----r2-|
    """

    def operator(source: Observable[Any]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            def on_next(event: Any) -> None:
                if type(event) is ToolResult:
                    checkpoints.record(Checkpoint(kind="tool", round=event.round, result=event))
                observer.on_next(event)

            return source.subscribe(
                on_next, observer.on_error, observer.on_completed, scheduler=scheduler
            )

        return Observable(subscribe)

    return operator
