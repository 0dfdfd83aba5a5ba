"""ReactAgent: the reason -> act -> observe loop as one cold Observable of events.

The agent holds the settings; each run is a :class:`~rxreact.agent.run_loop.RunLoop`, whose steps
(the loop itself) are drawn in :mod:`rxreact.agent.run_loop`. Here are the ways to run it: cold
``stream()`` / ``text()`` and hot ``start()``; the blocking and asyncio views built on them
(``run``, ``call``, ``iter``, ``arun``, ``astream``, ...) are in :mod:`rxreact.agent._views`.
Every view subscribes through ``_subscribe``, which ends in the run's one output observer
(``RunOutput``: ``seq``, the stall watchdog). The settings' checks are in
:mod:`rxreact.agent._settings`; what keeps this module past 300 lines is the class docstring,
which documents each of the agent's settings where a user looks for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, cast

from pydantic import BaseModel
from reactivex import Observable, abc
from reactivex import operators as ops

from rxreact._validate import (
    check_instance,
    check_int,
    check_optional_seconds,
    check_options,
    check_run,
    described,
)
from rxreact.agent._run_setup import RunSetup
from rxreact.agent._settings import check_settings, check_waits, tool_items
from rxreact.agent._views import AgentViews
from rxreact.agent.as_tool import ChildMemory, agent_tool
from rxreact.agent.handoffs import handoff_tools
from rxreact.agent.resume import RunsKeeper, resume_runs
from rxreact.agent.run_loop import RunLoop
from rxreact.checks.guardrails import Hold, InputGuardrail, OutputGuardrail, check_guardrails
from rxreact.checks.judge import Judge
from rxreact.checks.validation import (
    DraftChecks,
    OnJudgeError,
    OutputSpec,
    output_spec,
    validated_text,
)
from rxreact.context.budget import ContextBudget
from rxreact.errors import (
    InvalidArgumentError,
)
from rxreact.events import (
    AgentEvent,
    TextDelta,
)
from rxreact.memory.base import ChatMemory
from rxreact.messages._labels import Question
from rxreact.model.base import ChatModel
from rxreact.model.spec import model_from
from rxreact.result import AgentResult
from rxreact.runs.base import EventLog
from rxreact.runs.handle import AgentRun
from rxreact.runs.memory import InMemoryEventLog
from rxreact.rx._run_output import RunOutput
from rxreact.scheduling import shared_scheduler
from rxreact.tools.approval import Approver
from rxreact.tools.run_context import (
    DepsT,
    Instructions,
    PrepareTools,
    RunInfo,
    check_deps,
)
from rxreact.tools.source import ToolSource, collect_tools
from rxreact.tools.tool import Tool

__all__ = ["FORCED_FINAL_INSTRUCTION", "AgentResult", "ReactAgent"]

FORCED_FINAL_INSTRUCTION = (
    "You have reached the maximum number of reasoning rounds. Answer the user's question now, "
    "directly, from the information already in this conversation. Do not call any tools. "
    "If the information is incomplete, say what is missing and give your best answer."
)
"""The instruction appended (as a user message) for the forced final round."""


class ReactAgent(AgentViews[DepsT]):
    """A streaming ReAct agent, generic in the type of its runs' dependencies
    (``ReactAgent[Shop](..., deps_type=Shop)``; see :class:`~rxreact.RunContext`).

    Args:
        model: any :class:`~rxreact.model.base.ChatModel` (``OpenAIChatModel``,
            ``AnthropicModel``, ``ScriptedModel``...), or a ``"provider:model"`` string for
            :func:`~rxreact.model_from` (``"anthropic:claude-sonnet-4-5"``).
        tools: tools, plain functions (made tools with ``@tool`` defaults) and tool sources
            such as :class:`rxreact.mcp.MCPServer` (their tools are listed once, here).
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
        tracer_provider: an OpenTelemetry ``TracerProvider`` for GenAI spans (default: the
            global one, if set; none: no tracing, at no cost). See :mod:`rxreact.tracing`.
        trace_content: record prompts, answers and tool arguments/results on the spans
            (default: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``).
        approver: decides calls of tools that require approval (``@tool(requires_approval=
            ...)``); see :mod:`rxreact.tools.approval`. Without one, a cold stream denies them and
            a hot run waits for ``run.approve`` / ``run.deny``.
        approval_timeout: seconds a call waits for approval before it counts as denied
            (``None``: no limit).
        judge: checks every draft answer before the run ends (:class:`~rxreact.LLMJudge`, or
            any ``judge(question, draft, history) -> Verdict``, sync, async or Observable).
            A rejected draft stays in the history, its feedback follows as a user message and
            a new round answers again (tools and ``max_rounds`` as usual; after a forced round
            the revision is forced too).
        max_revisions: rejected drafts (by the judge or ``output_type``) that get another
            round; when they run out the last draft stands (``validated=False``).
        on_judge_error: a judge that fails lets the draft stand (``"accept"``,
            ``validated=None``) or ends the run with :class:`~rxreact.JudgeError` (``"raise"``).
        context_budget: keeps every request inside the model's context window (oldest turns
            dropped or summarized first; see :class:`~rxreact.ContextBudget`).
        options: request body parameters for every model request of every run (``temperature``,
            ``max_tokens``, ``seed``...; anything passes through). Merged over the model's own
            ``options`` and under a run's ``options=``, key by key. The forced round still
            sends ``tool_choice: "none"``.
        stall_timeout: seconds without any event after which a run ends with
            :class:`~rxreact.RunStalledError` (``None``: never). A safety net: the model's and
            the tools' timeouts end a silent run first, so it must exceed ``tool_timeout``.
        event_log: where hot runs (:meth:`start`) keep their events for subscribers
            (default: a new :class:`~rxreact.InMemoryEventLog`; a
            :class:`~rxreact.RedisEventLog` shares runs across processes).
        on_busy: what a run on a ``conversation_id`` does while another run (in this process or
            any other sharing the memory) holds it: ``"queue"`` waits, then loads the history
            that run committed; ``"reject"`` fails at once with
            :class:`~rxreact.ConversationBusyError`.
        busy_timeout: the longest wait in ``"queue"`` mode, in seconds, before failing with
            :class:`~rxreact.ConversationBusyError` (``None``: no limit).
        lease_ttl: seconds a run's hold on its conversation lasts without renewal; the agent
            renews it every third of that while the run lives, so a killed process blocks its
            conversation for at most this long.
        name: what the agent is called: every event its runs emit carries it (``agent``), it
            keys ``usage_by_agent``, and it names the tool :meth:`as_tool` makes.
        description: what the agent does, for a model that may call it (:meth:`as_tool`).
        input_guardrails: ``fn(question, history) -> GuardrailResult`` checks (sync, async or
            Observable), run while round 1 streams; answer text waits for them. One that trips
            ends the run with :class:`~rxreact.GuardrailTrippedError`, storing nothing. See
            :mod:`rxreact.checks.guardrails`.
        output_guardrails: ``fn(text_so_far) -> GuardrailResult`` checks of the answer at each
            sentence boundary and at the end of each round, while it streams.
        hold: ``"sentence"``: answer text goes out a sentence at a time, once every output
            guardrail passed on it; ``"none"``: at once, withdrawn by a ``guardrail_tripped``
            event if a later check trips.
        handoffs: agents the model may hand the turn to: one ``transfer_to_<name>`` tool each
            (described by the target's ``description``); the target runs the rest of the turn
            on the same history. See :mod:`rxreact.agent.handoffs`.
        max_handoffs: handoffs one turn may make; one more ends the run with
            :class:`~rxreact.MaxHandoffsExceededError`.
        deps_type: the class of the ``deps=`` every run is given (a run given anything else
            fails with :class:`~rxreact.InvalidArgumentError` at the call); tools, instructions
            and ``prepare_tools`` read them as ``ctx.deps``. See :mod:`rxreact.tools.run_context`.
        deps_factory: ``fn(info: RunInfo) -> deps`` for a run this process resumes
            (:meth:`resume_runs`): deps are never stored with a run. A run that was given deps
            and is resumed where there is no factory is given up, its tools not run.
        instructions: more of the system message, worked out at the start of each run: a
            ``str``, ``fn(ctx) -> str`` (sync or async) or a list of both, joined after
            ``system_prompt``; never stored in the conversation.
        prepare_tools: ``fn(ctx, tools) -> tools`` (sync or async) at the start of each run:
            the tools this run offers (hide some, change their descriptions...). A hidden tool
            the model calls anyway does not run: the model reads that there is no such tool.
        output_type: the typed answer of every run that names none (as ``stream(output_type=)``;
            what :func:`~rxreact.serve.create_app` serves); it streams as ``output_partial``
            events while it forms, and :meth:`iter_output` yields it.

    Raises:
        InvalidArgumentError: a setting of the wrong type or value (the message names it), or
            a function in ``tools`` that cannot be a tool (:class:`~rxreact.ToolDefinitionError`).
    """

    def __init__(
        self,
        model: ChatModel | str,
        tools: Iterable[Tool[..., Any] | Callable[..., Any] | ToolSource] = (),
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
        tracer_provider: Any = None,
        trace_content: bool | None = None,
        approver: Approver | None = None,
        approval_timeout: float | None = None,
        options: Mapping[str, Any] | None = None,
        judge: Judge | None = None,
        max_revisions: int = 2,
        on_judge_error: OnJudgeError = "accept",
        context_budget: ContextBudget | None = None,
        stall_timeout: float | None = 300.0,
        event_log: EventLog | None = None,
        on_busy: Literal["queue", "reject"] = "queue",
        busy_timeout: float | None = 30.0,
        lease_ttl: float = 10.0,
        name: str = "agent",
        description: str | None = None,
        input_guardrails: Iterable[InputGuardrail] | None = None,
        output_guardrails: Iterable[OutputGuardrail] | None = None,
        hold: Hold = "sentence",
        handoffs: Iterable[ReactAgent[Any]] = (),
        max_handoffs: int = 5,
        deps_type: type[DepsT] | None = None,
        deps_factory: Callable[[RunInfo], DepsT] | None = None,
        instructions: Instructions | None = None,
        prepare_tools: PrepareTools | None = None,
        output_type: Any = None,
    ) -> None:
        if isinstance(model, str):
            model = model_from(model)
        check_instance("model", model, "a ChatModel")
        if not isinstance(model, ChatModel):
            raise InvalidArgumentError(
                f"model must be a ChatModel (such as OpenAIChatModel(...) or ScriptedModel(...)), "
                f"got {described(model)}"
            )
        self.model = model
        self.tools: dict[str, Tool[..., Any]] = collect_tools(tool_items(tools))
        self.max_rounds: int = check_int("max_rounds", max_rounds, 1)
        tool_timeout, stall_timeout, busy_timeout, lease_ttl = check_waits(
            tool_timeout=tool_timeout,
            stall_timeout=stall_timeout,
            busy_timeout=busy_timeout,
            lease_ttl=lease_ttl,
            memory=memory,
        )
        check_settings(
            max_revisions=max_revisions,
            context_budget=context_budget,
            max_tool_errors=max_tool_errors,
            on_busy=on_busy,
            buffer_size=buffer_size,
            memory=memory,
            system_prompt=system_prompt,
            judge=judge,
            approver=approver,
            event_log=event_log,
            scheduler=scheduler,
            tools_scheduler=tools_scheduler,
            forced_final_instruction=forced_final_instruction,
            send_reasoning=send_reasoning,
            trace_content=trace_content,
        )
        approval_timeout = check_optional_seconds("approval_timeout", approval_timeout)
        options = check_options("options", options)
        if not isinstance(name, str) or not name:
            raise InvalidArgumentError(f"name must be a non-empty str, got {described(name)}")
        if description is not None and not isinstance(description, str):
            raise InvalidArgumentError(f"description must be a str, got {described(description)}")
        self.name: str = name
        self.input_guardrails: tuple[InputGuardrail, ...] = check_guardrails(
            "input", input_guardrails
        )
        self.output_guardrails: tuple[OutputGuardrail, ...] = check_guardrails(
            "output", output_guardrails
        )
        if hold not in ("sentence", "none"):
            raise InvalidArgumentError(f"hold must be 'sentence' or 'none', got {hold!r}")
        self.hold: Hold = hold
        self.max_handoffs: int = check_int("max_handoffs", max_handoffs, 0)
        self.handoffs: dict[str, ReactAgent[Any]] = {}
        """The handoff targets by the name of their ``transfer_to_<name>`` tool."""
        for tool_name, (transfer, target) in handoff_tools(handoffs).items():
            if tool_name in self.tools:
                raise InvalidArgumentError(f"a tool is already named {tool_name!r}")
            self.tools[tool_name] = transfer
            self.handoffs[tool_name] = target
        self.description: str | None = description
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
        self.tracer_provider = tracer_provider
        self.trace_content = trace_content
        self.approver = approver
        self.approval_timeout = approval_timeout
        self._tracer_cache: tuple[Any, Any] | None = None
        self.options: dict[str, Any] = dict(options or {})
        self.judge: Judge | None = judge
        self.max_revisions: int = max_revisions
        self.checks: DraftChecks = DraftChecks(judge, model, on_judge_error, self.tools_scheduler)
        self.context_budget: ContextBudget | None = context_budget
        self.stall_timeout = stall_timeout
        self.event_log: EventLog = event_log if event_log is not None else InMemoryEventLog()
        self.on_busy: Literal["queue", "reject"] = on_busy
        self.busy_timeout = busy_timeout
        self.lease_ttl = lease_ttl
        self.deps_type: type[DepsT] | None = deps_type
        if deps_factory is not None and not callable(deps_factory):
            raise InvalidArgumentError(
                f"deps_factory must be a function fn(info) -> deps, got {described(deps_factory)}"
            )
        self.deps_factory: Callable[[RunInfo], DepsT] | None = deps_factory
        self.setup: RunSetup = RunSetup(instructions, prepare_tools)
        self.output: OutputSpec | None = output_spec(output_type)
        """The agent's typed answer (``output_type``), for runs that name none."""
        """The instructions and ``prepare_tools`` each run starts with."""

    def __repr__(self) -> str:
        named = f"name={self.name!r}, " if self.name != "agent" else ""
        return (
            f"ReactAgent({named}model={self.model!r}, tools={list(self.tools)}, "
            f"max_rounds={self.max_rounds})"
        )

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        input_type: type[BaseModel] | None = None,
        memory: ChildMemory = "none",
        output_type: Any = None,
    ) -> Tool[..., Any]:
        """This agent as a tool another agent can call; its run nested in the caller's stream.

        See :func:`rxreact.agent.as_tool.agent_tool` for what the arguments mean.
        """
        return agent_tool(
            self,
            name,
            description,
            input_type=input_type,
            memory=memory,
            output_type=output_type,
        )

    # -- the run as an Observable -------------------------------------------------------------

    def stream(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        output_type: Any = None,
        deps: DepsT | None = None,
    ) -> Observable[AgentEvent]:
        """The run's events, cold: each subscription is one run.

        Events are delivered one at a time on the agent's scheduler threads (or the tools'
        threads for tool events), never on the subscribing thread. Disposing cancels the run.
        Failures arrive through ``on_error`` as :class:`~rxreact.RxReactError` subclasses.

        Args:
            question: the user's message: a ``str``, or a sequence of ``str`` and
                :class:`~rxreact.Text` / :class:`~rxreact.Image` / :class:`~rxreact.File`
                parts (``["What is in this picture?", Image.from_path("cat.png")]``).
            conversation_id: the conversation in ``memory`` to continue and append to.
            options: request body parameters for this run's requests, over the agent's.
            output_type: a pydantic model the answer must be: every round asks for it
                (``response_format`` ``json_schema``), a draft that does not parse is sent back
                like a judge's rejection, and ``final_answer.output`` holds the parsed value.
            deps: what this run's tools and instructions read as ``ctx.deps``.

        Raises:
            InvalidArgumentError: an argument of the wrong type (``deps`` not a ``deps_type``).
        """

        question = check_run(question, conversation_id, options)
        output = output_spec(output_type)
        check_deps(self.deps_type, deps)

        def subscribe(
            observer: abc.ObserverBase[Any], _: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            run = RunLoop(self, question, conversation_id, options, output, deps)
            return self._subscribe(run, observer)

        return Observable(subscribe)

    def start(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        output_type: Any = None,
        deps: DepsT | None = None,
    ) -> AgentRun:
        """Start a hot run now, independent of any subscriber, and return its handle.

        The run's events go to :attr:`event_log`; ``run.events(after=0)`` replays and follows
        them, any number of times, even after the run ended (within retention);
        ``run.cancel()`` stops it; ``run.result()`` / ``await run.aresult()`` wait for the
        :class:`AgentResult`. See :class:`~rxreact.AgentRun`. ``options``, ``output_type`` and
        ``deps`` as for :meth:`stream`.
        """
        return self._start(question, conversation_id, options, output_type, deps)

    def _start(
        self,
        question: Question,
        conversation_id: str | None,
        options: Mapping[str, Any] | None,
        output_type: Any,
        deps: Any,
        user: str | None = None,
    ) -> AgentRun:
        """:meth:`start`, for ``user`` when a server starts it (a resumed run's
        ``deps_factory`` is told whose it was)."""
        question = check_run(question, conversation_id, options)
        output = output_spec(output_type)
        check_deps(self.deps_type, deps)
        run = RunLoop(self, question, conversation_id, options, output, deps)
        run.user = user
        return AgentRun(self, run)

    def resume_runs(self) -> list[AgentRun]:
        """Claim the runs of :attr:`event_log` whose process died and resume them here.

        Call it at start-up (or keep :meth:`runs_keeper` running): each lost run is claimed
        by exactly one process, rebuilt from its checkpoints (nothing finished is done
        again), and goes on with ``seq`` where its log stopped, so its followers never
        notice. A run this agent cannot run (another agent's, other tools) is given up with
        the reason. No-op for a log that cannot resume (the in-memory one). See
        :mod:`rxreact.agent.resume`.
        """
        return resume_runs(self)

    def runs_keeper(self, interval: float | None = None) -> RunsKeeper:
        """:meth:`resume_runs` now and every ``interval`` seconds (default: the log's
        ``lost_after / 3``) on a background thread: ``with agent.runs_keeper(): ...``."""
        return RunsKeeper(self, interval)

    def _subscribe(
        self,
        run: RunLoop,
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
        output = RunOutput(
            on_next,
            on_error,
            on_completed,
            self.scheduler,
            self.stall_timeout,
            run.approvals,
            run if self.name != "agent" or self.handoffs else None,
        )
        return output.follow(run.events(), self.scheduler)

    def text(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> Observable[str]:
        """Only the live answer text of the run (``text_delta`` payloads of the root run: the
        text of agents it runs as tools is in ``stream()`` only).

        Text of a round streams as it arrives once the round is known to be answering. A round
        that writes a sentence and then calls a tool (a late switch) has already shown that
        sentence, as a chat UI would have; nothing more of that round follows. Reasoning is
        never included.

        With a ``judge`` a round's text is held back until its verdict: a rejected draft never
        shows, a passing one (or the draft that stands) comes out at once when judged
        (``stream()`` still shows every draft live).
        """
        events = self.stream(question, conversation_id, options=options, deps=deps)
        if self.judge is not None:
            return events.pipe(validated_text())
        return events.pipe(
            ops.filter(lambda event: isinstance(event, TextDelta) and not event.path),
            ops.map(lambda event: cast(TextDelta, event).delta),
        )

    # -- blocking and asyncio views -----------------------------------------------------------
