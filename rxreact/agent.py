"""ReactAgent: the reason -> act -> observe loop as one cold Observable of events.

::

    stream(q) = defer(load history)                              on the agent scheduler
                 concat  round(1)
                 round(n) = RoundStarted
                            model.stream(request)                chunks, on an I/O thread
                              .pipe(deliver_on(scheduler),       publishOn(boundedElastic)
                                    process_chunk(state),        mode decided, events live
                                    finish_round(state))         RoundFinished
                            concat defer(next step)
                 next step: FINAL_ANSWER -> commit memory, FinalAnswer, complete
                            TOOL_CALL    -> run_tools (merged, concurrent)
                                            concat defer(results in call order ->
                                                  round(n+1) | MaxRoundsReached, forced)

Nothing blocks a scheduler thread and nothing sleeps: every continuation is a ``defer``
subscribed when the previous part completes, so the same code runs on thread pools for real
and on a ``TestScheduler`` in virtual time.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any, cast

import reactivex
from pydantic import BaseModel, ConfigDict
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import CompositeDisposable, SerialDisposable
from reactivex.scheduler import VirtualTimeScheduler

from rxreact._immediate import immediately
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
    ToolMessage,
    Usage,
    UserMessage,
)
from rxreact.model.base import ChatModel
from rxreact.operators import deliver_on, finish_round, process_chunk, run_tools
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


def _subscribe_on(source: Observable[Any], scheduler: abc.SchedulerBase) -> Observable[Any]:
    """Subscribe to ``source`` on ``scheduler``; dispose synchronously.

    Loading memory and the first events then happen on the agent's scheduler, not on the
    thread that called subscribe. Unlike ``ops.subscribe_on``, which also *disposes* on the
    scheduler (later, on another thread), disposal here is immediate: when ``dispose()``
    returns, the HTTP stream is being closed and running tools' tokens are set.
    """

    def subscribe(
        observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        inner = SerialDisposable()

        def action(scheduler_: abc.SchedulerBase, __: Any = None) -> None:
            inner.disposable = source.subscribe(observer, scheduler=scheduler_)

        return CompositeDisposable(scheduler.schedule(action), inner)

    return Observable(subscribe)


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
    ) -> None:
        if max_rounds < 1:
            raise ValueError("max_rounds must be at least 1")
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

        return reactivex.defer(lambda _: self._events(_Run(self, question, conversation_id)))

    def _events(self, run: _Run) -> Observable[Any]:
        return _subscribe_on(reactivex.defer(lambda _: run.start()), self.scheduler)

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
        subscription = self._events(run).subscribe(on_next, on_error, done.set)
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

    # Everything below runs inside defer factories, on scheduler threads.

    def start(self) -> Observable[Any]:
        agent = self.agent
        if agent.memory is not None and self.conversation_id is not None:
            try:
                loaded = agent.memory.load(self.conversation_id)
            except RxReactError:
                raise
            except Exception as error:
                raise ChatMemoryError(f"could not load conversation: {error}") from error
            self.history.extend(loaded)
        self._add(UserMessage(content=self.question))
        return self._round(forced=False)

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

    def _round(self, forced: bool) -> Observable[Any]:
        agent = self.agent
        self.rounds += 1
        state = RoundState(self.rounds, forced=forced)
        request = self._request(forced)
        model_events = agent.model.stream(request).pipe(
            deliver_on(agent.scheduler, agent.buffer_size),
            process_chunk(state),
            finish_round(state),
        )
        return reactivex.concat(
            immediately(RoundStarted(round=state.round)),
            model_events,
            reactivex.defer(lambda _: self._after_round(state)),
        )

    def _after_round(self, state: RoundState) -> Observable[Any]:
        self.usage = state.usage + self.usage if state.usage is not None else self.usage
        if state.mode is not Mode.TOOL_CALL:
            return self._finish(state)
        self._add(state.assistant_message(keep_reasoning=self.agent.send_reasoning))
        calls = state.tool_calls()
        results: list[ToolResult | None] = [None] * len(calls)
        tools = immediately(*calls).pipe(
            run_tools(
                self.agent.tools,
                round_number=state.round,
                results=results,
                scheduler=self.agent.scheduler,
                tools_scheduler=self.agent.tools_scheduler,
                default_timeout=self.agent.tool_timeout,
            )
        )
        return reactivex.concat(tools, reactivex.defer(lambda _: self._after_tools(state, results)))

    def _after_tools(
        self, state: RoundState, results: Sequence[ToolResult | None]
    ) -> Observable[Any]:
        for call, result in zip(state.tool_calls(), results, strict=True):
            if result is None:  # cannot happen unless a tool observable completed empty
                raise AgentError(f"tool call {call.id} completed without a result")
            self._add(ToolMessage(tool_call_id=call.id, content=result.content, name=call.name))
            self.tool_errors += result.is_error
        if self.tool_errors > self.agent.max_tool_errors:
            raise ToolErrorBudgetExceededError(
                f"{self.tool_errors} tool calls failed in this run "
                f"(max_tool_errors={self.agent.max_tool_errors})"
            )
        if self.rounds < self.agent.max_rounds:
            return self._round(forced=False)
        return reactivex.concat(
            immediately(MaxRoundsReached(round=state.round)), self._round(forced=True)
        )

    def _finish(self, state: RoundState) -> Observable[Any]:
        agent = self.agent
        self._add(state.assistant_message(keep_reasoning=agent.send_reasoning))
        if agent.memory is not None and self.conversation_id is not None:
            try:
                agent.memory.append(self.conversation_id, self.turn)
            except RxReactError:
                raise
            except Exception as error:
                raise ChatMemoryError(f"could not store conversation: {error}") from error
        return immediately(
            FinalAnswer(
                round=state.round,
                text=state.text,
                rounds=self.rounds,
                forced=state.forced,
                usage=self.usage,
            )
        )
