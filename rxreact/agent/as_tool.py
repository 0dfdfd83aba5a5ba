"""``agent.as_tool()``: an agent another agent calls as a tool, its run nested in the caller's.

::

    planner:  -s-c-S-----------------------R-s-t-t-f|     (S tool_execution_started,
    child:         s'-c'-S'-R'-s'-t'-t'-f'|              R tool_result of the agent tool)
    stream(): -s-c-S-s'-c'-S'-R'-s'-t'-t'-f'-R-s-t-t-f|   one seq over all of it

The child run is the call's body: its events pass into the calling round as they come (the
same event types, marked with the child's ``agent`` name and a ``path`` one call id longer),
its final answer (or ``output``, with an ``output_type``) is the call's result, and its usage
is added to the caller's. It gets the caller's ``deps`` (its tools read them as ``ctx.deps``).
Disposing the caller, or the call's timeout, disposes the child run: its HTTP stream closes and
its tools' tokens are set, as for any run that is disposed. A child without an ``approver`` of
its own sends its approval requests to the caller's (so to the root run's handle:
``run.approve(call_id)`` works at any depth).

The child's events are delivered on the child agent's scheduler and enter the caller's round
like a tool's progress (one hop: the child's first step is scheduled there). Outside a run (a
tool called by hand, ``tool.invoke``) the child runs alone and only its result comes back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field
from reactivex import Observable, abc

from rxreact._validate import described
from rxreact.agent.run_loop import RunLoop
from rxreact.errors import AgentError, InvalidArgumentError, ToolDefinitionError
from rxreact.events import FinalAnswer
from rxreact.messages import AssistantMessage, Message
from rxreact.rx._fused import subscribe_fused
from rxreact.tools.nesting import CallingRun
from rxreact.tools.run_context import check_deps
from rxreact.tools.tool import TOOL_NAME, Tool

if TYPE_CHECKING:
    from rxreact.agent.react_agent import ReactAgent

__all__ = ["ChildMemory", "agent_tool"]

ChildMemory: TypeAlias = Literal["none", "shared"] | Callable[[str | None], str]
"""What a child run remembers: ``"none"`` (a fresh conversation each call), ``"shared"`` (the
calling run's conversation so far, read only), or a function from the caller's
``conversation_id`` (``None`` without one) to the child's own, in the child agent's memory."""


class _Question(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="The question or task, complete in itself.")


def agent_tool(
    agent: ReactAgent[Any],
    name: str | None = None,
    description: str | None = None,
    *,
    input_type: type[BaseModel] | None = None,
    memory: ChildMemory = "none",
    output_type: Any = None,
) -> Tool[..., Any]:
    """``agent`` as a tool: each call is one run of it, nested in the calling run.

    Args:
        agent: the agent the tool runs.
        name: the tool's name (default: the agent's ``name``).
        description: what the calling model reads (default: the agent's ``description``,
            else a sentence naming it).
        input_type: a pydantic model whose fields are the tool's parameters; the child reads
            the validated input as JSON. Default: one ``question: str`` parameter.
        memory: ``"none"``, ``"shared"`` or a ``conversation_id`` function (:data:`ChildMemory`).
        output_type: a pydantic model the child's answer must be (as ``stream(output_type=)``);
            the calling model then reads the parsed ``output`` as JSON.

    Raises:
        ToolDefinitionError: a name providers reject.
        InvalidArgumentError: an ``input_type`` that is not a pydantic model, or a ``memory``
            that is none of the three (a ``conversation_id`` function needs an agent with a
            ``memory``).
    """
    tool_name = agent.name if name is None else name
    if not isinstance(tool_name, str) or not TOOL_NAME.fullmatch(tool_name):
        raise ToolDefinitionError(
            f"tool name {tool_name!r} is not accepted by model providers: use 1 to 64 letters, "
            f"digits, '_' or '-'" + ("" if name else " (pass as_tool(name=...))")
        )
    text = (
        description
        or agent.description
        or (f"Ask the {agent.name} agent: it works on the question with its own tools and answers.")
    )
    if input_type is not None and not (
        isinstance(input_type, type) and issubclass(input_type, BaseModel)
    ):
        raise InvalidArgumentError(
            f"input_type must be a pydantic model class, got {described(input_type)}"
        )
    if memory not in ("none", "shared") and not callable(memory):
        raise InvalidArgumentError(
            f"memory must be 'none', 'shared' or a conversation_id function, got "
            f"{described(memory)}"
        )
    if callable(memory) and agent.memory is None:
        raise InvalidArgumentError(
            "memory=<conversation_id function> needs an agent with a memory "
            "(ReactAgent(memory=...)) to keep the conversations in"
        )
    arguments_model = input_type or _Question
    schema = arguments_model.model_json_schema()
    schema.pop("title", None)

    def question_of(arguments: dict[str, Any]) -> str:
        if input_type is None:
            return str(arguments["question"])
        return input_type(**arguments).model_dump_json()

    def child(arguments: dict[str, Any], caller: CallingRun | None, call_id: str) -> RunLoop:
        """A run of ``agent`` for one call, placed under ``caller`` when there is one."""
        parent_conversation = caller.conversation_id if caller is not None else None
        conversation_id = memory(parent_conversation) if callable(memory) else None
        deps = caller.deps if caller is not None else None  # the caller's, as handoffs share
        check_deps(agent.deps_type, deps)
        run = RunLoop(agent, question_of(arguments), conversation_id, None, output_type, deps)
        if caller is None:
            return run
        run.path = (*caller.path, call_id)
        if agent.approver is None:  # asked where the root run is answered
            run.approvals = caller.approvals
        if memory == "shared":
            run.history.extend(_conversation_so_far(caller.history))
            run.loaded = len(run.history)
        return run

    def nested(
        arguments: dict[str, Any],
        call_id: str,
        caller: CallingRun | None,
        emit: Callable[[Any], None],
    ) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            run = child(arguments, caller, call_id)
            finals: list[FinalAnswer] = []

            def on_next(event: Any) -> None:
                if type(event) is FinalAnswer and event.path == run.path:
                    finals.append(event)
                emit(event)

            def on_completed() -> None:
                if not finals:  # cannot happen: a run's last event is its final_answer
                    observer.on_error(AgentError(f"agent {agent.name!r} ended without an answer"))
                    return
                final = finals[0]
                if caller is not None:
                    caller.absorb(final)
                result = final.output if output_type is not None else None
                observer.on_next(final.text if result is None else result)
                observer.on_completed()

            return subscribe_fused(
                run.events(), on_next, observer.on_error, on_completed, agent.scheduler
            )

        return Observable(subscribe)

    def alone(**arguments: Any) -> Observable[Any]:
        """The call outside a run: the child's result, its events unseen."""
        return nested(arguments, "", None, _drop)

    return Tool(
        name=tool_name,
        description=text,
        parameters=schema,
        function=alone,
        _arguments_model=arguments_model,
        _nested=nested,
    )


def _drop(_: Any) -> None:
    pass


def _conversation_so_far(history: Sequence[Message]) -> list[Message]:
    """The calling run's history without its last assistant message when that is the one whose
    tool calls are running now (the child's question takes its place)."""
    messages = list(history)
    if messages and isinstance(messages[-1], AssistantMessage) and messages[-1].tool_calls:
        messages.pop()
    return messages
