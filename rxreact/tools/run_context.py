"""The typed run context: what a tool, an instructions function or ``prepare_tools`` knows
about the run it serves, and the dependencies (``deps``) the caller gave that run.

::

    agent = ReactAgent[Shop](model, [refund], deps_type=Shop)
    agent.run("Refund order 7", deps=Shop(db, user))       # one agent, any number of users

    @tool
    def refund(ctx: RunContext[Shop], order: str) -> str:  # ctx is not in the schema
        return ctx.deps.db.refund(order, by=ctx.deps.user)

A run's ``deps`` are never serialised: a run resumed in another process (a durable event log)
gets new ones from that process's ``ReactAgent(deps_factory=fn)``, called with the run's
:class:`RunInfo`; ``create_app(agent, deps_factory=fn(request, user))`` makes them for the
runs it serves.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeAlias, get_origin

from typing_extensions import TypeVar

from rxreact._validate import described
from rxreact.cancellation import CancellationToken
from rxreact.errors import InvalidArgumentError
from rxreact.messages import Usage

if TYPE_CHECKING:
    from rxreact.tools.tool import Tool

__all__ = [
    "DepsFactory",
    "DepsT",
    "InstructionPart",
    "Instructions",
    "PrepareTools",
    "RunContext",
    "RunInfo",
    "check_deps",
    "is_run_context",
]

DepsT = TypeVar("DepsT", default=None)
"""The type of a run's dependencies (``None`` for an agent that takes none)."""


@dataclass(frozen=True)
class RunContext(Generic[DepsT]):
    """What a tool (whose first parameter is annotated ``RunContext[Deps]``), an instructions
    function or ``prepare_tools`` receives about the run it serves."""

    deps: DepsT
    """The run's dependencies: ``deps=`` of the call that started it (``None`` without)."""
    run_id: str
    """The run's id (the hot run's ``run.id``)."""
    conversation_id: str | None
    """The conversation the run reads and extends, if any."""
    round: int
    """The round the call belongs to (``0`` before the first round: instructions and
    ``prepare_tools``)."""
    usage: Usage | None
    """The run's usage so far (every request it made before this moment)."""
    agent: str
    """The ``name`` of the agent running the turn now."""
    path: tuple[str, ...] = ()
    """Where the run sits: the tool call ids from the root run down to it (``()`` for a root
    run; longer in an agent run as a tool)."""
    cancellation: CancellationToken = field(default_factory=CancellationToken)
    """Set when the call (or the run) is disposed or timed out."""


@dataclass(frozen=True)
class RunInfo:
    """A run resumed in another process, as its ``deps_factory`` sees it."""

    run_id: str
    conversation_id: str | None
    agent: str
    """The name of the agent that runs it."""
    user: str | None = None
    """The user the server started it for (``None``: not a served run)."""


InstructionPart: TypeAlias = str | Callable[[RunContext[Any]], str | Awaitable[str]]
"""A string, or a function ``fn(ctx) -> str`` (sync or async) called at each run's start."""

Instructions: TypeAlias = InstructionPart | Sequence[InstructionPart]
"""``ReactAgent(instructions=...)``: one part or a list of them, joined by blank lines."""

PrepareTools: TypeAlias = Callable[
    [RunContext[Any], list["Tool[..., Any]"]],
    "list[Tool[..., Any]] | Awaitable[list[Tool[..., Any]]]",
]
"""``ReactAgent(prepare_tools=fn)``: ``fn(ctx, tools) -> tools`` at the start of each run."""

DepsFactory: TypeAlias = Callable[[RunInfo], Any]
"""``ReactAgent(deps_factory=fn)``: a resumed run's deps from its :class:`RunInfo`."""


def is_run_context(annotation: Any) -> bool:
    """Whether a parameter annotated so receives the run context (``RunContext`` or
    ``RunContext[Deps]``)."""
    return annotation is RunContext or get_origin(annotation) is RunContext


def check_deps(deps_type: Any, deps: Any) -> None:
    """Refuse ``deps`` that are not a ``deps_type`` (when that is a class: a protocol or a
    generic alias cannot be checked at run time, and is not).

    Raises:
        InvalidArgumentError: the message names the expected type.
    """
    if deps_type is None or not isinstance(deps_type, type):
        return
    try:
        ok = isinstance(deps, deps_type)
    except TypeError:  # a Protocol that is not runtime_checkable
        return
    if not ok:
        raise InvalidArgumentError(
            f"deps must be a {deps_type.__qualname__} (deps_type), got {described(deps)}"
        )


def check_instructions(instructions: Any) -> tuple[str | Callable[..., Any], ...]:
    """``instructions=`` as a tuple of parts (strings and functions).

    Raises:
        InvalidArgumentError: anything else than a string, a function or a list of them.
    """
    if instructions is None:
        return ()
    parts = (
        (instructions,)
        if isinstance(instructions, str) or callable(instructions)
        else tuple(instructions)
        if isinstance(instructions, Sequence)
        else None
    )
    if parts is None or not all(isinstance(p, str) or callable(p) for p in parts):
        raise InvalidArgumentError(
            f"instructions must be a str, a function fn(ctx) -> str or a list of those, got "
            f"{described(instructions)}"
        )
    for part in parts:
        if callable(part) and inspect.isclass(part):
            raise InvalidArgumentError(f"instructions must hold functions, got {described(part)}")
    return parts
