"""RunLoop: one run of the reason -> act -> observe loop, as a sequence of steps.

::

    stream(q) = concat_steps(steps)                  each step subscribed on the agent
                                                     scheduler when the one before completes
                [.guard.events: answer text held behind the guardrails' checks]
    steps:      load history, add the question
                [(GuardrailStarted): input guardrails start, checked while round 1 runs]
                [fit the request to the context budget: maybe one summary request]
                round(n) = ([ContextTrimmed]) (RoundStarted) then
                           model.stream(request)                chunks, on an I/O thread
                             .pipe(deliver_on(scheduler),       publishOn(boundedElastic)
                                   process_chunk(state),        mode decided, events live
                                   finish_round(state))         RoundFinished
                FINAL_ANSWER -> [check the draft: output_type, then the judge, on the tools
                                 scheduler: (ValidationStarted) (AnswerValidated);
                                 rejected with revisions left: feedback -> round(n+1)]
                                [wait for every guardrail check], commit memory,
                                (FinalAnswer), complete
                TOOL_CALL    -> run_tools (merged, concurrent, results in call order; an agent
                                tool's run nested in it)
                                -> round(n+1), or (MaxRoundsReached) + the forced round, or
                                (Handoff): the target agent runs round(n+1) on

The steps are a generator: the code between two ``yield`` statements runs when the previous step
completed, so it reads like the loop it is (and is kept in one module, past 300 lines, for
that: what a step needs of the ones before is the loop's own state), and the events of every
round reach the subscriber through the same few observers (no nesting per round). Nothing
blocks a scheduler thread and nothing sleeps, so the same code runs on thread pools for real
and on a ``TestScheduler`` in virtual time.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reactivex import Observable

from rxreact.agent import _checkpointing as checkpointing
from rxreact.agent._conversation import LeaseTerms, hold_for, holding_conversation, run_owner
from rxreact.agent._run_setup import setup_step, system_text
from rxreact.agent.handoffs import HandoffTo, handoff_after
from rxreact.agent.round import Mode, RoundState
from rxreact.cancellation import CancellationToken
from rxreact.checks.validation import (
    REVISION_INSTRUCTION,
    DraftOutcome,
    OutputSpec,
    describe_errors,
    output_spec,
)
from rxreact.context._fit_step import RequestFitter
from rxreact.errors import (
    AgentError,
    ChatMemoryError,
    OutputValidationError,
    RxReactError,
    ToolErrorBudgetExceededError,
)
from rxreact.events import (
    FinalAnswer,
    MaxRoundsReached,
    OutputReset,
    RoundStarted,
    ToolResult,
    UsagePurpose,
)
from rxreact.history import ensure_tool_calls_closed
from rxreact.memory._process_leases import leasing
from rxreact.memory.lease import Lease
from rxreact.messages import (
    ChatRequest,
    ContentPart,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    content_text,
)
from rxreact.operators import (
    concat_steps,
    deliver_on,
    finish_round,
    output_partials,
    process_chunk,
    run_tools,
)
from rxreact.operators._guardrails import RunGuard
from rxreact.operators._mark_origin import mark_origin_
from rxreact.operators._with_lease import LeaseHold
from rxreact.result import AgentResult
from rxreact.runs.checkpoints import Checkpointer
from rxreact.rx._immediate import immediately, starting_with
from rxreact.tools.approval import Approvals
from rxreact.tools.run_context import RunContext
from rxreact.tools.tool import Tool
from rxreact.tracing import RunTracer, run_tracer

if TYPE_CHECKING:
    from rxreact.agent.react_agent import ReactAgent

__all__ = ["RunLoop"]

_UNCHECKED = DraftOutcome()
"""A run's outcome until a draft is checked (each check fills a new one; nothing writes
this): one object per run less for every garbage collection to walk."""

_ABSORBING = threading.Lock()
"""Held while a child run's usage is added to its caller's (the runs of one tool round end
concurrently). One for the process, not one per run: it is taken once per agent-tool call."""


class RunLoop:
    """One run of an agent: its history, counters and usage, and its steps (``events()``).

    Each ``stream()`` subscription, each ``run()`` and each ``start()`` makes one.
    """

    def __init__(
        self,
        agent: ReactAgent[Any],
        question: str | tuple[ContentPart, ...],
        conversation_id: str | None,
        options: Mapping[str, Any] | None = None,
        output_type: Any = None,
        deps: Any = None,
    ) -> None:
        self.agent: ReactAgent[Any] = agent
        """The agent running the turn now: the one the run started on, until a handoff."""
        self.owner = agent  # whose memory and conversation the turn belongs to
        self.deps: Any = deps
        """What the run's tools and instructions get as ``ctx.deps`` (never serialised)."""
        self.user: str | None = None  # the user a server started the run for
        self.tools: dict[str, Tool[..., Any]] = agent.tools
        """The tools this run offers (``prepare_tools`` may hide or change some)."""
        self.instructions: str | None = agent.setup.static
        """The run's instructions (``ReactAgent(instructions=)``), after the system prompt."""
        self.handoffs: int = 0
        self.round_base: int = 0  # rounds made before the running agent took over
        # Merged once per run: model defaults sit under these, in the model's encoder.
        self.options: dict[str, Any] = {**agent.options, **(options or {})}
        self.question = question
        """The user message's content: a string, or parts (checked by ``check_question``)."""
        self.conversation_id = conversation_id
        self.history: list[Message] = []
        self.turn: list[Message] = []  # what this run adds to memory, committed at the end
        self.rounds: int = 0
        self.usage: Usage | None = None
        self.tool_errors: int = 0
        self.run_id: str = uuid.uuid4().hex
        self.lease: Lease | None = None  # this run's hold on its conversation, once granted
        self._lease_hold = LeaseHold()  # how long each renewal extends it (hold_conversation)
        self.output: OutputSpec | None = (
            output_type if isinstance(output_type, OutputSpec) else output_spec(output_type)
        ) or agent.output
        if self.output is not None:
            self.options["response_format"] = self.output.response_format
        self.checked: bool = agent.judge is not None or self.output is not None
        self.revisions: int = 0
        self.outcome: DraftOutcome = _UNCHECKED
        self.usage_by_purpose: dict[UsagePurpose, Usage] = {}
        self.usage_by_agent: dict[str, Usage] = {}
        self.path: tuple[str, ...] = ()
        """Where this run sits: the tool call ids from the root run down to it (set by the
        agent tool that runs it; ``()`` for a root run)."""
        self.loaded: int = 0  # how many history messages came from memory (the rest is this turn)
        self.request: ChatRequest | None = None  # the last one sent
        self.fitter: RequestFitter | None = (
            RequestFitter(
                agent.context_budget,
                agent.model,
                agent.tools_scheduler,
                conversation_id or self.run_id,
                lambda usage: self._count("summary", usage),
            )
            if agent.context_budget is not None
            else None
        )
        self.trace: RunTracer | None = run_tracer(agent, conversation_id)
        self.guard: RunGuard | None = RunGuard.of(agent, self.trace)
        self.approvals: Approvals = Approvals(agent.approver, agent.tools_scheduler)
        """The tool calls waiting for approval; a hot run's handle sets ``external`` and
        forwards ``approve`` / ``deny`` here."""
        self.checkpoints: Checkpointer | None = None
        """Set by a hot run's handle when its event log is durable: each finished step is
        recorded there before the next one starts (:mod:`rxreact.runs.checkpoints`)."""

    @property
    def waiting_for_approval(self) -> int:
        """Tool calls of this run waiting for a person's decision (0 when none): while
        positive, the run is not stalled, however long nothing happens."""
        return self.approvals.waiting

    def run_context(self, round_number: int, token: CancellationToken) -> RunContext[Any]:
        """What a tool of round ``round_number`` (``0``: the run's setup) knows of the run."""
        return RunContext(
            self.deps,
            self.run_id,
            self.conversation_id,
            round_number,
            self.usage,
            self.agent.name,
            self.path,
            token,
        )

    def result(self, final: FinalAnswer) -> AgentResult:
        """The finished run's result; ``final`` is its ``final_answer`` event."""
        return AgentResult(
            answer=final.text,
            rounds=final.rounds,
            forced=final.forced,
            messages=tuple(self.turn),
            usage=final.usage,
            usage_by_purpose=final.usage_by_purpose,
            usage_by_agent=final.usage_by_agent,
            validated=final.validated,
            output=final.output,
        )

    def events(self) -> Observable[Any]:
        """The run: its steps, each subscribed when the one before completes."""
        events = self._holding_conversation(lambda: concat_steps(self._steps()))
        if self.guard is not None:
            events = self.guard.events(events)
        if self.path:  # a root run's events are marked where seq is (RunOutput)
            events = mark_origin_(events, self)
        return events if self.trace is None else self.trace.run(events)

    def _holding_conversation(self, steps: Callable[[], Observable[Any]]) -> Observable[Any]:
        """``steps()`` while holding the conversation's lease (taken before the history is
        loaded, released when the run ends); no lease without memory or conversation."""
        return holding_conversation(self, steps)

    def _lease_terms(self) -> LeaseTerms:
        """Who holds the conversation, and what the run does while another run holds it."""
        return LeaseTerms(run_owner(self.run_id), self.agent.on_busy, self.agent.busy_timeout)

    def _leased(self) -> None:
        """The conversation's lease was just granted (``self.lease``); a new run records it
        with its start, once the history is loaded."""

    def hold_conversation(self, ttl: float | None) -> None:
        """From now on renew the conversation's lease with ``ttl`` seconds (at once, and at
        each renewal); ``None``: back to the agent's ``lease_ttl``.

        For a run that waits a long time with nobody working on it (parked until a person
        approves a call): its conversation stays leased that long, even if this process
        goes away, and the run's next owner takes the lease over at once when it resumes
        the run. No-op while the run holds no lease (no memory or conversation, not yet
        granted, or ended). A lease found lost (it lapsed and another run took it) is not
        renewed: the run's memory commit will be refused.

        Raises:
            InvalidArgumentError: ``ttl`` is not a positive number of seconds or None.
            ChatMemoryError: the memory failed to renew the lease.
        """
        hold_for(self._lease_hold, ttl)

    # Everything below runs inside the generator, resumed on the agent's scheduler threads.

    def _steps(self) -> Iterator[Observable[Any]]:
        r"""The ReAct loop, one Observable per step.

        ``concat_steps`` pulls the next step only when the previous one completed, so
        the code between two ``yield`` statements sees the finished round (or tool results) it
        depends on; an exception raised here ends the run through ``on_error``. The loop is
        flat on purpose: nested ``concat(..., defer(next))`` would add two observer layers
        per round to the path of every chunk.
        """
        self._load_history()
        self._add(UserMessage(content=self.question))
        if self.checkpoints is not None:
            checkpointing.start(self, self.checkpoints)
        setup = setup_step(self, self.agent)
        if setup is not None:
            yield setup
        if self.guard is not None:  # input guardrails: checking from now, while round 1 runs
            yield self.guard.begin(content_text(self.question), self.history[:-1])
        yield from self._rounds((), False)

    def _rounds(self, prefix: tuple[Any, ...], forced: bool) -> Iterator[Observable[Any]]:
        """The loop from the next round on (``prefix``: events before its ``round_started``):
        a new run's, or a resumed one's (:mod:`rxreact.agent.resume`)."""
        agent = self.agent
        durable = self.checkpoints
        while True:
            state = RoundState(self.rounds + 1, forced=forced)
            if self.fitter is not None:
                yield self._fit(forced)
            yield self._round(state, prefix)
            self._count("rounds", state.usage)
            if self.fitter is not None and self.request is not None:
                self.fitter.calibrate(self.request, state.usage)
            self._add(state.assistant_message(keep_reasoning=agent.send_reasoning))
            if durable is not None:
                yield checkpointing.response(self, durable, state)
            if state.mode is not Mode.TOOL_CALL:
                if self.checked:
                    yield self._check(state)
                    if self._revise():
                        if durable is not None:
                            checkpointing.note(self, durable, state.round)
                        if self.output is not None:  # its partials are withdrawn
                            yield immediately(self._output_reset(state.round))
                        prefix, forced = (), state.forced
                        continue
                    self._check_output_type(state)
                if self.guard is not None:  # a run whose guardrail trips stores nothing
                    yield self.guard.settled()
                self._commit_memory()
                yield immediately(self._final_answer(state))
                return
            handoff = yield from self._act(state, durable)
            if handoff is not None:  # the target runs the rest of the turn
                yield immediately(handoff.event)  # still marked as the agent that hands over
                agent = self.agent = handoff.target
                setup = setup_step(self, agent)
                if setup is not None:
                    yield setup
                self.round_base = self.rounds
                self.checked = agent.judge is not None or self.output is not None
                prefix, forced = (), False
                continue
            if self.rounds - self.round_base >= agent.max_rounds:
                prefix, forced = (MaxRoundsReached(round=state.round),), True

    def _act(
        self, state: RoundState, durable: Checkpointer | None
    ) -> Generator[Observable[Any], None, HandoffTo | None]:
        """A tool-call round's tools, then their results in the history; returns the handoff
        they ask for, if any.

        A generator of its own, so that what it makes (the calls' Observable with its
        subscribe function and setup, the results list) goes when the tools are done: in
        ``_rounds``' frame it stayed alive through the whole next round, for every garbage
        collection to walk.
        """
        calls = state.tool_calls()
        results: list[ToolResult | None] = [None] * len(calls)
        tools = self._run_calls(calls, state.round, results)
        yield tools
        del tools  # the step's Observable: nothing of it is needed while the results are added
        self._add_results(calls, results)
        if durable is not None:
            yield durable.written()
        return handoff_after(self, calls, results, state.round)

    def _run_calls(
        self, calls: Sequence[ToolCall], round_number: int, results: list[ToolResult | None]
    ) -> Observable[Any]:
        """The step that runs ``calls`` (of round ``round_number``) concurrently, filling
        ``results`` in call order; on a durable log each result is recorded as it comes."""
        agent = self.agent
        tools = immediately(*calls).pipe(
            run_tools(
                self.tools,
                round_number=round_number,
                results=results,
                scheduler=agent.scheduler,
                tools_scheduler=agent.tools_scheduler,
                default_timeout=agent.tool_timeout,
                trace=self.trace,
                approvals=self.approvals,
                approval_timeout=agent.approval_timeout,
                caller=self,
            )
        )
        durable = self.checkpoints
        return tools if durable is None else tools.pipe(checkpointing.record_tool_results(durable))

    def _count(self, purpose: UsagePurpose, usage: Usage | None) -> None:
        if usage is not None:
            self.usage = usage + self.usage
            self.usage_by_purpose[purpose] = usage + self.usage_by_purpose.get(purpose)
            name = self.agent.name
            self.usage_by_agent[name] = usage + self.usage_by_agent.get(name)

    def absorb(self, final: FinalAnswer) -> None:
        """Add the usage of a child run (an agent tool's) that ended with ``final``."""
        if final.usage is None:
            return
        with _ABSORBING:
            self.usage = final.usage + self.usage
            for purpose, usage in final.usage_by_purpose.items():
                self.usage_by_purpose[purpose] = usage + self.usage_by_purpose.get(purpose)
            for name, usage in final.usage_by_agent.items():
                self.usage_by_agent[name] = usage + self.usage_by_agent.get(name)

    def _check(self, state: RoundState) -> Observable[Any]:
        """Check the draft the round just added (the last message) against the output type
        and the judge."""
        self.outcome = DraftOutcome()
        return self.agent.checks.check(
            state.round,
            content_text(self.question),
            state.text,
            self.history[:-1],
            self.output,
            self.outcome,
        )

    def _output_reset(self, round_number: int) -> OutputReset:
        return OutputReset(round=round_number, reason=self.outcome.feedback)

    def _revise(self) -> bool:
        """After a check: count the judge's usage; on a rejection with revisions left, add the
        feedback for the model and say a new round follows."""
        outcome = self.outcome
        self._count("judge", outcome.usage)
        if outcome.passed is not False or self.revisions >= self.agent.max_revisions:
            return False
        self.revisions += 1
        self._add(UserMessage(content=REVISION_INSTRUCTION.format(feedback=outcome.feedback)))
        return True

    def _check_output_type(self, state: RoundState) -> None:
        """The last draft a typed run may give: an error, not an answer, when it is not of the
        output type (a judge's last rejection lets the draft stand; a value of the wrong type
        would be no answer at all to a program that asked for the type)."""
        errors = self.outcome.output_errors
        if errors is None:
            return
        assert self.output is not None
        name = getattr(self.output.output_type, "__name__", repr(self.output.output_type))
        raise OutputValidationError(
            f"the answer is not a valid {name} after {self.revisions} revision(s): "
            f"{describe_errors(errors)}",
            state.text,
            errors,
        )

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
        self.loaded = len(self.history)

    def _add(self, message: Message) -> None:
        self.history.append(message)
        self.turn.append(message)

    def _request(self, forced: bool) -> ChatRequest:
        agent = self.agent
        messages: list[Message] = []
        if self.fitter is not None:
            messages = self.fitter.messages()
        else:
            system = system_text(agent.system_prompt, self.instructions)
            if system:
                messages.append(SystemMessage(content=system))
            messages.extend(ensure_tool_calls_closed(self.history))
            if forced:
                messages.append(UserMessage(content=agent.forced_final_instruction))
        tools = tuple(t.spec for t in self.tools.values())
        # The API rejects tool_choice without tools; with no tools there is nothing to forbid.
        choice = "none" if forced and tools else None
        return ChatRequest(
            messages=tuple(messages), tools=tools, tool_choice=choice, options=self.options
        )

    def _fit(self, forced: bool) -> Observable[Any]:
        """Fit the next request to the context budget (earlier history may go, never the
        system prompt or this turn)."""
        assert self.fitter is not None
        agent = self.agent
        system = system_text(agent.system_prompt, self.instructions)
        head = [SystemMessage(content=system)] if system else []
        turn = ensure_tool_calls_closed(self.history[self.loaded :])
        if forced:
            turn.append(UserMessage(content=agent.forced_final_instruction))
        earlier = ensure_tool_calls_closed(self.history[: self.loaded])
        return self.fitter.prepare(head, earlier, turn, tuple(t.spec for t in self.tools.values()))

    def _round(self, state: RoundState, prefix: tuple[Any, ...]) -> Observable[Any]:
        agent = self.agent
        self.rounds = state.round
        request = self.request = self._request(state.forced)
        if self.fitter is not None:
            prefix += self.fitter.trimmed(state.round)
        model_events = agent.model.stream(request).pipe(
            deliver_on(agent.scheduler, agent.buffer_size),
            process_chunk(state),
        )
        if self.output is not None:  # the typed answer as it forms
            model_events = model_events.pipe(output_partials(state.round))
        model_events = model_events.pipe(finish_round(state))
        if self.trace is not None:
            model_events = self.trace.round(model_events, request, state)
        return starting_with(model_events, *prefix, RoundStarted(round=state.round))

    def _add_results(self, calls: Sequence[ToolCall], results: Sequence[ToolResult | None]) -> None:
        for call, result in zip(calls, results, strict=True):
            if result is None:  # cannot happen unless a tool observable completed empty
                raise AgentError(f"tool call {call.id} completed without a result")
            content = result.parts or result.content
            self._add(
                ToolMessage(
                    tool_call_id=call.id,
                    content=content,
                    name=call.name,
                    is_error=result.is_error,
                )
            )
            self.tool_errors += result.is_error
        if self.tool_errors > self.agent.max_tool_errors:
            raise ToolErrorBudgetExceededError(
                f"{self.tool_errors} tool calls failed in this run "
                f"(max_tool_errors={self.agent.max_tool_errors})"
            )

    def _commit_memory(self) -> None:
        agent = self.owner
        if agent.memory is None or self.conversation_id is None:
            return
        try:
            leasing(agent.memory).append(self.conversation_id, self.turn, lease=self.lease)
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
            usage_by_purpose=self.usage_by_purpose,
            usage_by_agent=self.usage_by_agent,
            validated=self.outcome.passed if self.checked else None,
            output=self.outcome.output,
        )
