"""What a run works out at its start, from its context: the dynamic instructions and the tools
it offers (``ReactAgent(instructions=fn, prepare_tools=fn)``).

::

    run start:  load history, add the question
                setup: instructions fn(ctx) ... and prepare_tools(ctx, tools), concurrently,
                       each on the tools scheduler (async ones on the I/O loop)      (no event)
                round 1 ...  every request: system_prompt + instructions, the prepared tools

Instructions are part of the system message of each request, never of the history: a run
that continues a conversation computes them again, and they are stored nowhere. An agent
with neither (the common case) has no setup step at all. A handoff target works out its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import reactivex
from reactivex import Observable
from reactivex import operators as ops

from rxreact._validate import described
from rxreact.cancellation import CancellationToken
from rxreact.errors import AgentError, InvalidArgumentError, RxReactError
from rxreact.rx._call_once import call_once
from rxreact.tools.run_context import check_instructions
from rxreact.tools.tool import Tool, as_tool

if TYPE_CHECKING:
    from rxreact.agent.react_agent import ReactAgent
    from rxreact.agent.run_loop import RunLoop

__all__ = ["RunSetup", "setup_step"]


class RunSetup:
    """An agent's ``instructions`` and ``prepare_tools``, checked at its construction."""

    __slots__ = ("parts", "prepare_tools", "static")

    def __init__(self, instructions: Any, prepare_tools: Any) -> None:
        self.parts: tuple[str | Callable[..., Any], ...] = check_instructions(instructions)
        if prepare_tools is not None and (
            not callable(prepare_tools) or isinstance(prepare_tools, type)
        ):
            raise InvalidArgumentError(
                f"prepare_tools must be a function fn(ctx, tools) -> tools, got "
                f"{described(prepare_tools)}"
            )
        self.prepare_tools: Callable[..., Any] | None = prepare_tools
        dynamic = prepare_tools is not None or any(callable(p) for p in self.parts)
        self.static: str | None = None if dynamic else _joined(self.parts)
        """The instructions when nothing is computed per run (``None``: none, or dynamic)."""

    @property
    def dynamic(self) -> bool:
        return self.prepare_tools is not None or any(callable(p) for p in self.parts)


def system_text(system_prompt: str | None, instructions: str | None) -> str | None:
    """The system message of a run's requests: the static prompt, then the instructions."""
    return _joined(tuple(p for p in (system_prompt, instructions) if p)) or None


def setup_step(run: RunLoop, agent: ReactAgent[Any]) -> Observable[Any] | None:
    """Set ``run.instructions`` and ``run.tools`` for ``agent``; the step that computes them
    when some are functions (``None``: set at once)."""
    setup = agent.setup
    run.tools = agent.tools
    if not setup.dynamic:
        run.instructions = setup.static
        return None
    token = CancellationToken()
    context = run.run_context(0, token)
    texts: list[str] = [p if isinstance(p, str) else "" for p in setup.parts]
    scheduler = agent.tools_scheduler
    calls: list[Observable[Any]] = []

    def keep_text(position: int) -> Callable[[Any], None]:
        def keep(text: Any) -> None:
            if not isinstance(text, str):
                raise AgentError(f"an instructions function returned {described(text)}, not a str")
            texts[position] = text

        return keep

    for position, part in enumerate(setup.parts):
        if callable(part):
            once = call_once(part, (context,), {}, token, scheduler)
            calls.append(once.pipe(ops.do_action(keep_text(position))))

    def keep_tools(tools: Any) -> None:
        run.tools = prepared_tools(tools)

    if setup.prepare_tools is not None:
        offered = list(agent.tools.values())
        once = call_once(setup.prepare_tools, (context, offered), {}, token, scheduler)
        calls.append(once.pipe(ops.do_action(keep_tools)))

    def done() -> None:
        run.instructions = _joined(tuple(texts))

    def failed(error: Exception, _: Any) -> Observable[Any]:
        if isinstance(error, RxReactError):
            return reactivex.throw(error)
        return reactivex.throw(
            AgentError(f"the run's setup failed: {type(error).__name__}: {error}")
        )

    return reactivex.merge(*calls).pipe(
        ops.ignore_elements(),
        ops.do_action(on_completed=done),
        ops.catch(failed),
        ops.finally_action(token.cancel),
    )


def prepared_tools(tools: Any) -> dict[str, Tool[..., Any]]:
    """What ``prepare_tools`` returned, by name.

    Raises:
        AgentError: not a list of tools, or two tools with one name.
    """
    if not isinstance(tools, Sequence) or isinstance(tools, str):
        raise AgentError(f"prepare_tools must return a list of tools, got {described(tools)}")
    by_name: dict[str, Tool[..., Any]] = {}
    for item in tools:
        if not callable(item):
            raise AgentError(f"prepare_tools returned {described(item)}, not a tool")
        made = as_tool(item)
        if made.name in by_name:
            raise AgentError(f"prepare_tools returned two tools named {made.name!r}")
        by_name[made.name] = made
    return by_name


def _joined(parts: tuple[Any, ...]) -> str | None:
    text = "\n\n".join(p for p in parts if isinstance(p, str) and p)
    return text or None
