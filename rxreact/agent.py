"""ReactAgent: the reason -> act -> observe loop as one cold Observable of events.

::

    stream(q) = concat_steps(steps)                  each step subscribed on the agent
                                                     scheduler when the one before completes
    steps:      load history, add the question
                round(n) = (RoundStarted) then
                           model.stream(request)                chunks, on an I/O thread
                             .pipe(deliver_on(scheduler),       publishOn(boundedElastic)
                                   process_chunk(state),        mode decided, events live
                                   finish_round(state))         RoundFinished
                FINAL_ANSWER -> commit memory, (FinalAnswer), complete
                TOOL_CALL    -> run_tools (merged, concurrent, results in call order)
                                -> round(n+1), or (MaxRoundsReached) + the forced round

The steps are a generator: the code between two ``yield`` statements runs when the previous step
completed, so it reads like the loop it is, and the events of every round reach the
subscriber through the same few observers (no nesting per round). Nothing blocks a scheduler
thread and nothing sleeps, so the same code runs on thread pools for real and on a
``TestScheduler`` in virtual time.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from typing import Any, cast

from pydantic import BaseModel, ConfigDict
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.scheduler import VirtualTimeScheduler

from rxreact._immediate import immediately, starting_with
from rxreact._run_output import RunOutput
from rxreact.errors import AgentError, ChatMemoryError, RxReactError, ToolErrorBudgetExceededError
from rxreact.events import (
    AgentEvent,
    FinalAnswer,
    MaxRoundsReached,
    RoundStarted,
    TextDelta,
    ToolResult,
)
from rxreact.history import ensure_tool_calls_closed
from rxreact.memory.base import ChatMemory
from rxreact.messages import (
    ChatRequest,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from rxreact.model.base import ChatModel
from rxreact.operators import concat_steps, deliver_on, finish_round, process_chunk, run_tools
from rxreact.round import Mode, RoundState
from rxreact.scheduling import shared_scheduler
from rxreact.tools import Tool, as_tool

__all__ = ["FORCED_FINAL_INSTRUCTION", "AgentResult", "ReactAgent"]

FORCED_FINAL_INSTRUCTION = (
    "You have reached the maximum number of reasoning rounds. Answer the user's question now, "
    "directly, from the information already in this conversation. Do not call any tools. "
    "If the information is incomplete, say what is missing and give your best answer."
)
"""The instruction appended (as a user message) for the forced final round."""


class AgentResult(BaseModel):
    """What a finished run produced (``ReactAgent.run``); equal to its ``final_answer`` event."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    answer: str
    """The text of the final round."""
    rounds: int
    """Model requests made, the forced one included."""
    forced: bool
    """True when the answer came from the forced round after ``max_rounds``."""
    messages: tuple[Message, ...]
    """The turn the run added to the conversation: the question, every tool round (assistant
    message and tool results in call order) and the final answer."""
    usage: Usage | None
    """Usage summed over the run."""


class ReactAgent:
    """A streaming ReAct agent.

    Args:
        model: any :class:`~rxreact.model.base.ChatModel` (``OpenAIChatModel``, ``ScriptedModel``).
        tools: tools, or plain functions (made tools with ``@tool`` defaults).
        max_rounds: model requests that offer tools; if the last still calls tools, they run and
            one forced round (``tool_choice="none"``) streams the answer.
        memory: where conversations live between runs (used with a ``conversation_id``).
        system_prompt: prepended to every request.
        scheduler: where events are processed and delivered, and the clock for timeouts
            (default: a shared thread pool). A ``TestScheduler`` runs the whole loop in
            virtual time.
        tools_scheduler: where sync tools run (default: a shared pool of 16 threads, or
            ``scheduler`` when that was given).
        tool_timeout: seconds before a tool call becomes an error result (``None``: no limit).
        max_tool_errors: failed tool calls a run tolerates; one more ends the run with
            :class:`~rxreact.ToolErrorBudgetExceededError`.
        forced_final_instruction: the instruction of the forced round.
        send_reasoning: keep reasoning on assistant messages in the history (the model decides
            whether to send it; see ``OpenAIChatModel(send_reasoning=...)``).
        buffer_size: chunks buffered between the model's reader and the agent before the reader
            is held back.
        stall_timeout: seconds without any event after which a run ends with
            :class:`~rxreact.RunStalledError` (``None``: never). A safety net: the model's and
            the tools' timeouts end a silent run first, so it must exceed ``tool_timeout``.
    """

    def __init__(
        self,
        model: ChatModel,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        max_rounds: int = 5,
        memory: ChatMemory | None = None,
        system_prompt: str | None = None,
        scheduler: abc.SchedulerBase | None = None,
        tools_scheduler: abc.SchedulerBase | None = None,
        tool_timeout: float | None = 60.0,
        max_tool_errors: int = 8,
        forced_final_instruction: str = FORCED_FINAL_INSTRUCTION,
        send_reasoning: bool = True,
        buffer_size: int | None = 1024,
        stall_timeout: float | None = 300.0,
    ) -> None:
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
        if stall_timeout is not None and (
            stall_timeout <= 0 or (tool_timeout is not None and stall_timeout <= tool_timeout)
        ):
            raise ValueError("stall_timeout must be positive and longer than tool_timeout")
        self.model = model
        self.tools: dict[str, Tool] = {}
        for item in tools:
            t = as_tool(item)
            if t.name in self.tools:
                raise ValueError(f"two tools are named {t.name!r}")
            self.tools[t.name] = t
        self.max_rounds = max_rounds
        self.memory = memory
        self.system_prompt = system_prompt
        self.scheduler: abc.SchedulerBase = scheduler or shared_scheduler("agent", 8)
        self.tools_scheduler: abc.SchedulerBase = (
            tools_scheduler or scheduler or shared_scheduler("tools", 16)
        )
        self.tool_timeout = tool_timeout
        self.max_tool_errors = max_tool_errors
        self.forced_final_instruction = forced_final_instruction
        self.send_reasoning = send_reasoning
        self.buffer_size = buffer_size
        self.stall_timeout = stall_timeout

    def __repr__(self) -> str:
        return (
            f"ReactAgent(model={self.model!r}, tools={list(self.tools)}, "
            f"max_rounds={self.max_rounds})"
        )

    # -- the run as an Observable -------------------------------------------------------------

    def stream(self, question: str, conversation_id: str | None = None) -> Observable[AgentEvent]:
        """The run's events, cold: each subscription is one run.

        Events are delivered one at a time on the agent's scheduler threads (or the tools'
        threads for tool events), never on the subscribing thread. Disposing cancels the run.
        Failures arrive through ``on_error`` as :class:`~rxreact.RxReactError` subclasses.
        """

        def subscribe(
            observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            return self._subscribe(_Run(self, question, conversation_id), observer)

        return Observable(subscribe)

    def _subscribe(
        self,
        run: _Run,
        on_next: abc.ObserverBase[Any] | Callable[[Any], None],
        on_error: Callable[[Exception], None] | None = None,
        on_completed: Callable[[], None] | None = None,
    ) -> abc.DisposableBase:
        """Subscribe to the run on the agent's scheduler.

        Its steps are subscribed there (``concat_steps`` schedules each one, the first
        included, on the subscribe-time scheduler), so loading memory and the first events
        never run on the subscribing thread. Disposal is synchronous: when ``dispose()``
        returns, the HTTP stream is being closed and running tools' tokens are set (unlike
        ``ops.subscribe_on``, which disposes later, on the scheduler). No Observable of its
        own around the steps: each would add an observer layer to every event's path.
        """
        if isinstance(on_next, abc.ObserverBase):
            observer = on_next
            on_next, on_error, on_completed = (
                observer.on_next,
                observer.on_error,
                observer.on_completed,
            )
        output = RunOutput(on_next, on_error, on_completed, self.scheduler, self.stall_timeout)
        return output.watch(run.events().subscribe(output, scheduler=self.scheduler))

    def text(self, question: str, conversation_id: str | None = None) -> Observable[str]:
        """Only the live answer text of the run (``text_delta`` payloads).

        Text of a round streams as it arrives once the round is known to be answering. A round
        that writes a sentence and then calls a tool (a late switch) has already shown that
        sentence, as a chat UI would have; nothing more of that round follows. Reasoning is
        never included.
        """
        return self.stream(question, conversation_id).pipe(
            ops.filter(lambda event: isinstance(event, TextDelta)),
            ops.map(lambda event: cast(TextDelta, event).delta),
        )

    # -- blocking and asyncio views -----------------------------------------------------------

    def run(self, question: str, conversation_id: str | None = None) -> AgentResult:
        """Run to the end and return the result (blocking).

        Raises:
            RxReactError: whatever ended the run.
        """
        done = threading.Event()
        outcome: dict[str, Any] = {}

        def on_next(event: Any) -> None:
            if isinstance(event, FinalAnswer):
                outcome["final"] = event

        def on_error(error: Exception) -> None:
            outcome["error"] = error
            done.set()

        run = _Run(self, question, conversation_id)
        subscription = self._subscribe(run, on_next, on_error, done.set)
        try:
            if isinstance(self.scheduler, VirtualTimeScheduler) and not done.is_set():
                # Blocking on virtual time means advancing it. The base class's start runs until
                # nothing is left; TestScheduler.start would also jump the clock to 1000.
                VirtualTimeScheduler.start(self.scheduler)
            done.wait()
        finally:
            subscription.dispose()
        if "error" in outcome:
            raise outcome["error"]
        final: FinalAnswer = outcome["final"]
        return AgentResult(
            answer=final.text,
            rounds=final.rounds,
            forced=final.forced,
            messages=tuple(run.turn),
            usage=final.usage,
        )

    def call(self, question: str, conversation_id: str | None = None) -> str:
        """Run to the end and return the answer text (blocking)."""
        return self.run(question, conversation_id).answer

    async def astream(
        self, question: str, conversation_id: str | None = None
    ) -> AsyncIterator[AgentEvent]:
        """The run's events as an async iterator; leaving the loop early cancels the run."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        def put(kind: str, value: Any = None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

        subscription = self.stream(question, conversation_id).subscribe(
            lambda e: put("next", e), lambda e: put("error", e), lambda: put("done")
        )
        try:
            while True:
                kind, value = await queue.get()
                if kind == "next":
                    yield value
                elif kind == "error":
                    raise value
                else:
                    return
        finally:
            subscription.dispose()


class _Run:
    """The state of one subscription to ``ReactAgent.stream``: history, counters, usage."""

    def __init__(self, agent: ReactAgent, question: str, conversation_id: str | None) -> None:
        self.agent = agent
        self.question = question
        self.conversation_id = conversation_id
        self.history: list[Message] = []
        self.turn: list[Message] = []  # what this run adds to memory, committed at the end
        self.rounds = 0
        self.usage: Usage | None = None
        self.tool_errors = 0
        self.run_id = uuid.uuid4().hex[:12]

    def events(self) -> Observable[Any]:
        """The run: its steps, each subscribed when the one before completes."""
        return concat_steps(self._steps())

    # Everything below runs inside the generator, resumed on the agent's scheduler threads.

    def _steps(self) -> Iterator[Observable[Any]]:
        r"""The ReAct loop, one Observable per step.

        ``concat_steps`` pulls the next step only when the previous one completed, so
        the code between two ``yield`` statements sees the finished round (or tool results) it
        depends on; an exception raised here ends the run through ``on_error``. The loop is
        flat on purpose: nested ``concat(..., defer(next))`` would add two observer layers
        per round to the path of every chunk.
        """
        agent = self.agent
        self._load_history()
        self._add(UserMessage(content=self.question))
        prefix: tuple[Any, ...] = ()
        forced = False
        while True:
            state = RoundState(self.rounds + 1, forced=forced)
            yield self._round(state, prefix)
            if state.usage is not None:
                self.usage = state.usage + self.usage
            self._add(state.assistant_message(keep_reasoning=agent.send_reasoning))
            if state.mode is not Mode.TOOL_CALL:
                self._commit_memory()
                yield immediately(self._final_answer(state))
                return
            calls = state.tool_calls()
            results: list[ToolResult | None] = [None] * len(calls)
            yield immediately(*calls).pipe(
                run_tools(
                    agent.tools,
                    round_number=state.round,
                    results=results,
                    scheduler=agent.scheduler,
                    tools_scheduler=agent.tools_scheduler,
                    default_timeout=agent.tool_timeout,
                )
            )
            self._add_results(calls, results)
            if self.rounds >= agent.max_rounds:
                prefix, forced = (MaxRoundsReached(round=state.round),), True

    def _load_history(self) -> None:
        agent = self.agent
        if agent.memory is None or self.conversation_id is None:
            return
        try:
            loaded = agent.memory.load(self.conversation_id)
        except RxReactError:
            raise
        except Exception as error:
            raise ChatMemoryError(f"could not load conversation: {error}") from error
        self.history.extend(loaded)

    def _add(self, message: Message) -> None:
        self.history.append(message)
        self.turn.append(message)

    def _request(self, forced: bool) -> ChatRequest:
        agent = self.agent
        messages: list[Message] = []
        if agent.system_prompt:
            messages.append(SystemMessage(content=agent.system_prompt))
        messages.extend(ensure_tool_calls_closed(self.history))
        if forced:
            messages.append(UserMessage(content=agent.forced_final_instruction))
        tools = tuple(t.spec for t in agent.tools.values())
        # The API rejects tool_choice without tools; with no tools there is nothing to forbid.
        choice = "none" if forced and tools else None
        return ChatRequest(messages=tuple(messages), tools=tools, tool_choice=choice)

    def _round(self, state: RoundState, prefix: tuple[Any, ...]) -> Observable[Any]:
        agent = self.agent
        self.rounds = state.round
        request = self._request(state.forced)
        model_events = agent.model.stream(request).pipe(
            deliver_on(agent.scheduler, agent.buffer_size),
            process_chunk(state),
            finish_round(state),
        )
        return starting_with(model_events, *prefix, RoundStarted(round=state.round))

    def _add_results(self, calls: Sequence[ToolCall], results: Sequence[ToolResult | None]) -> None:
        for call, result in zip(calls, results, strict=True):
            if result is None:  # cannot happen unless a tool observable completed empty
                raise AgentError(f"tool call {call.id} completed without a result")
            self._add(ToolMessage(tool_call_id=call.id, content=result.content, name=call.name))
            self.tool_errors += result.is_error
        if self.tool_errors > self.agent.max_tool_errors:
            raise ToolErrorBudgetExceededError(
                f"{self.tool_errors} tool calls failed in this run "
                f"(max_tool_errors={self.agent.max_tool_errors})"
            )

    def _commit_memory(self) -> None:
        agent = self.agent
        if agent.memory is None or self.conversation_id is None:
            return
        try:
            agent.memory.append(self.conversation_id, self.turn)
        except RxReactError:
            raise
        except Exception as error:
            raise ChatMemoryError(f"could not store conversation: {error}") from error

    def _final_answer(self, state: RoundState) -> FinalAnswer:
        return FinalAnswer(
            round=state.round,
            text=state.text,
            rounds=self.rounds,
            forced=state.forced,
            usage=self.usage,
        )
