"""The blocking and asyncio ways to run a :class:`~rxreact.agent.ReactAgent`: ``run``,
``call``, ``iter``, ``iter_text``, ``arun``, ``acall``, ``astream``.

Each is built on the agent's ``stream()`` / ``text()`` or on its one subscription path
(``_subscribe``, which ends in the run's ``RunOutput``); they live here so that ``agent.py``
keeps the settings and the Observables.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, cast

from reactivex.scheduler import VirtualTimeScheduler

from rxreact._validate import check_run
from rxreact.agent.run_loop import RunLoop
from rxreact.checks.validation import output_spec
from rxreact.errors import AgentError, InvalidArgumentError
from rxreact.events import AgentEvent, FinalAnswer
from rxreact.messages._labels import Question
from rxreact.operators._output_values import NOT_OUTPUT, output_value, output_values
from rxreact.result import AgentResult
from rxreact.rx._blocking import iterate
from rxreact.tools.run_context import DepsT, check_deps

if TYPE_CHECKING:
    from rxreact.agent.react_agent import ReactAgent

__all__ = ["AgentViews"]


class AgentViews(Generic[DepsT]):
    """The views of a run that block or await, mixed into :class:`~rxreact.agent.ReactAgent`."""

    def run(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        output_type: Any = None,
        deps: DepsT | None = None,
    ) -> AgentResult:
        """Run to the end and return the result (blocking).

        Raises:
            RxReactError: whatever ended the run.
        """
        agent = _agent(self)
        question = check_run(question, conversation_id, options)
        output = output_spec(output_type)
        check_deps(agent.deps_type, deps)
        done = threading.Event()
        outcome: dict[str, Any] = {}

        def on_next(event: Any) -> None:
            if isinstance(event, FinalAnswer) and not event.path:  # not an agent tool's
                outcome["final"] = event

        def on_error(error: Exception) -> None:
            outcome["error"] = error
            done.set()

        run = RunLoop(agent, question, conversation_id, options, output, deps)
        subscription = agent._subscribe(run, on_next, on_error, done.set)
        try:
            if isinstance(agent.scheduler, VirtualTimeScheduler) and not done.is_set():
                # Blocking on virtual time means advancing it. The base class's start runs until
                # nothing is left; TestScheduler.start would also jump the clock to 1000.
                VirtualTimeScheduler.start(agent.scheduler)
            done.wait()
        finally:
            subscription.dispose()
        if "error" in outcome:
            raise outcome["error"]
        return run.result(outcome["final"])

    def call(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> str:
        """Run to the end and return the answer text (blocking)."""
        agent = _agent(self)
        return agent.run(question, conversation_id, options=options, deps=deps).answer

    def iter(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        buffer_size: int = 256,
        options: Mapping[str, Any] | None = None,
        output_type: Any = None,
        deps: DepsT | None = None,
    ) -> Iterator[AgentEvent]:
        """The run's events as a blocking iterator: ``for event in agent.iter(q): ...``.

        The run starts when the loop asks for the first event. At most ``buffer_size`` events
        wait for the loop; beyond that the run is held back until the loop catches up.
        Leaving the loop early (``break``, an exception, ``close()``) cancels the run.

        Raises:
            RxReactError: whatever ended the run, from the loop's ``next``.
        """
        agent = _agent(self)
        events = agent.stream(
            question, conversation_id, options=options, output_type=output_type, deps=deps
        )
        return iterate(events, agent.scheduler, buffer_size)

    def iter_text(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        buffer_size: int = 256,
        options: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> Iterator[str]:
        """The live answer text (what :meth:`text` emits) as a blocking iterator.

        ``for piece in agent.iter_text(q): print(piece, end="", flush=True)``. Buffering and
        cancellation as in :meth:`iter`.
        """
        agent = _agent(self)
        text = agent.text(question, conversation_id, options=options, deps=deps)
        return iterate(text, agent.scheduler, buffer_size)

    def iter_output(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        buffer_size: int = 256,
        options: Mapping[str, Any] | None = None,
        output_type: Any = None,
        deps: DepsT | None = None,
    ) -> Iterator[Any]:
        """The typed answer as it forms, as a blocking iterator: each ``output_partial``'s
        value (a ``dict`` parsed so far), ``{}`` again after a rejected draft
        (``output_reset``), and last the validated object (``final_answer.output``).

        ``for form in agent.iter_output(q, output_type=Forecast): render(form)``. Buffering
        and cancellation as in :meth:`iter`.

        Raises:
            InvalidArgumentError: no ``output_type`` here nor on the agent.
            RxReactError: whatever ended the run (``OutputValidationError`` included).
        """
        agent = _agent(self)
        _typed(agent, output_type)
        events = agent.stream(
            question, conversation_id, options=options, output_type=output_type, deps=deps
        )
        return iterate(events.pipe(output_values()), agent.scheduler, buffer_size)

    async def aiter_output(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        output_type: Any = None,
        deps: DepsT | None = None,
    ) -> AsyncIterator[Any]:
        """:meth:`iter_output` as an async iterator; leaving the loop early cancels the run."""
        agent = _agent(self)
        _typed(agent, output_type)
        events = agent.astream(
            question, conversation_id, options=options, output_type=output_type, deps=deps
        )
        async for event in events:
            value = output_value(event)
            if value is not NOT_OUTPUT:
                yield value

    async def arun(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        output_type: Any = None,
        deps: DepsT | None = None,
    ) -> AgentResult:
        """Run to the end and return the result, awaiting instead of blocking.

        Cancelling the awaiting task cancels the run.

        Raises:
            RxReactError: whatever ended the run.
        """
        agent = _agent(self)
        question = check_run(question, conversation_id, options)
        output = output_spec(output_type)
        check_deps(agent.deps_type, deps)
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[FinalAnswer] = loop.create_future()

        def settle(final: FinalAnswer | None, error: Exception | None) -> None:
            if finished.done():
                return
            if error is not None:
                finished.set_exception(error)
            elif final is not None:
                finished.set_result(final)

        def on_next(event: Any) -> None:
            if isinstance(event, FinalAnswer) and not event.path:  # not an agent tool's
                loop.call_soon_threadsafe(settle, event, None)

        def on_error(error: Exception) -> None:
            loop.call_soon_threadsafe(settle, None, error)

        def on_completed() -> None:  # after final_answer, which settled first; else a bug
            missing = AgentError("the run completed without a final_answer event")
            loop.call_soon_threadsafe(settle, None, missing)

        run = RunLoop(agent, question, conversation_id, options, output, deps)
        subscription = agent._subscribe(run, on_next, on_error, on_completed)
        try:
            if isinstance(agent.scheduler, VirtualTimeScheduler):
                VirtualTimeScheduler.start(agent.scheduler)
            final = await finished
        finally:
            subscription.dispose()
        return run.result(final)

    async def acall(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> str:
        """Run to the end and return the answer text, awaiting instead of blocking."""
        agent = _agent(self)
        return (await agent.arun(question, conversation_id, options=options, deps=deps)).answer

    async def astream(
        self,
        question: Question,
        conversation_id: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        output_type: Any = None,
        deps: DepsT | None = None,
    ) -> AsyncIterator[AgentEvent]:
        """The run's events as an async iterator; leaving the loop early cancels the run."""
        agent = _agent(self)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        def put(kind: str, value: Any = None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

        events = agent.stream(
            question, conversation_id, options=options, output_type=output_type, deps=deps
        )
        subscription = events.subscribe(
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


def _typed(agent: ReactAgent[Any], output_type: Any) -> None:
    if output_type is None and agent.output is None:
        raise InvalidArgumentError(
            "iter_output needs an output_type (iter_output(q, output_type=...) or "
            "ReactAgent(output_type=...))"
        )


def _agent(views: AgentViews[DepsT]) -> ReactAgent[DepsT]:
    """The agent these views belong to (the mixin is only ever a ReactAgent)."""
    return cast("ReactAgent[DepsT]", views)
