"""What a tool that runs an agent needs from the run that called it.

A plain tool sees only its arguments. An agent tool (``agent.as_tool()``) runs a whole child
run whose events belong in the caller's stream, whose usage belongs in the caller's total and
whose approvals are answered on the caller's handle; ``run_tools`` hands it the calling run
(:class:`CallingRun`) and a way to pass events into the round (``emit``). Defined here, below
the agent, so the operators can carry it without importing the agent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from reactivex import Observable

if TYPE_CHECKING:
    from rxreact.cancellation import CancellationToken
    from rxreact.events import FinalAnswer
    from rxreact.messages import Message
    from rxreact.tools.approval import Approvals
    from rxreact.tools.run_context import RunContext

__all__ = ["CallingRun", "NestedRun"]


class CallingRun(Protocol):
    """The run that calls an agent tool (a :class:`~rxreact.agent.run_loop.RunLoop`)."""

    @property
    def path(self) -> tuple[str, ...]:
        """The calling run's place: tool call ids from the root run down to it."""
        ...

    @property
    def approvals(self) -> Approvals:
        """Where the calling run's approval requests wait (the root's, at any depth)."""
        ...

    @property
    def history(self) -> Sequence[Message]:
        """The calling run's conversation so far (what ``memory="shared"`` reads)."""
        ...

    @property
    def conversation_id(self) -> str | None:
        """The calling run's conversation, if any."""
        ...

    @property
    def deps(self) -> Any:
        """The calling run's dependencies (a child run gets the same)."""
        ...

    def run_context(self, round_number: int, token: CancellationToken) -> RunContext[Any]:
        """What a tool of round ``round_number`` called with ``token`` knows of this run."""
        ...

    def absorb(self, final: FinalAnswer) -> None:
        """Add a finished child run's usage to the calling run's."""
        ...


NestedRun: TypeAlias = Callable[
    [dict[str, Any], str, CallingRun, Callable[[Any], None]], Observable[Any]
]
"""``nested(arguments, call_id, caller, emit)``: the child run as the call's body: its events
go to ``emit`` (already marked with their ``agent`` and ``path``), its result is the one
value of the returned Observable."""
