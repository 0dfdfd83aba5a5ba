"""rxreact's operators: the agent loop written as Rx composition.

Each operator lives in its own private module; these wrappers are the public, documented API.
The module is long because it is that documentation (a marble diagram and the contract of
each operator), kept together so the operators read as one vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from reactivex import Observable, abc

from rxreact.agent.round import RoundState
from rxreact.events import ToolResult
from rxreact.memory.base import ChatMemory
from rxreact.memory.lease import Lease
from rxreact.messages import ToolCall
from rxreact.model.chunks import ChatChunk
from rxreact.model.retry_policy import Backoff
from rxreact.operators._by_origin import from_agent_, only_root_
from rxreact.operators._concat_steps import concat_steps_
from rxreact.operators._deliver_on import deliver_on_
from rxreact.operators._events_of import events_of_
from rxreact.operators._finish_round import finish_round_
from rxreact.operators._output_partial import output_partials_
from rxreact.operators._process_chunk import process_chunk_
from rxreact.operators._retry_unstarted import retry_unstarted_
from rxreact.operators._run_tools import run_tools_
from rxreact.operators._timeout_with import timeout_with_
from rxreact.operators._with_lease import OnBusy, with_lease_
from rxreact.tools.approval import Approvals
from rxreact.tools.nesting import CallingRun
from rxreact.tools.tool import Tool
from rxreact.tracing import RunTracer

__all__ = [
    "LEASE_POLL",
    "concat_steps",
    "deliver_on",
    "events_of",
    "finish_round",
    "from_agent",
    "only_root",
    "output_partials",
    "process_chunk",
    "retry_unstarted",
    "run_tools",
    "timeout_with",
    "with_lease",
]

_T = TypeVar("_T")
_E = TypeVar("_E")


def events_of(*kinds: type[_E]) -> Callable[[Observable[Any]], Observable[_E]]:
    """Only the events of the given classes, typed as them: the event union narrowed.

    ::

        source:                  -s-t-t-c-r-s-t-f|    (s round_started, t text_delta,
        events_of(FinalAnswer):  ---------------f|     c tool_call_started, r tool_result,
        events_of(TextDelta):    ---t-t-------t--|     f final_answer)

    ``agent.stream(q).pipe(events_of(FinalAnswer))`` is an ``Observable[FinalAnswer]`` to a
    type checker, so ``.text`` and ``.usage`` need no cast. Errors and completion pass through.

    Args:
        kinds: event classes (``FinalAnswer``, ``TextDelta``, …); subclasses match too.

    Returns:
        An operator from any Observable to one of those events.
    """
    return events_of_(*kinds)


def only_root() -> Callable[[Observable[Any]], Observable[Any]]:
    """Only the root run's own events: none of the runs of agents it called as tools.

    ::

        source:       -s-S-s'-t'-f'-R-t-f|     (primed: a child run's events, path != ())
        only_root():  -s-S-----------R-t-f|    (S tool_execution_started, R tool_result)

    Returns:
        An operator keeping the events whose ``path`` is ``()``.
    """
    return only_root_()


def from_agent(name: str) -> Callable[[Observable[Any]], Observable[Any]]:
    """Only the events of the runs of the agent called ``name`` (``ReactAgent(name=...)``), at
    any depth, every call of it included.

    ::

        source:                  -s-S-s'-t'-f'-R-t-f|   (primed: agent "researcher")
        from_agent("researcher"): ----s'-t'-f'--------|

    Args:
        name: the agent's name; tell calls of it apart by ``path``.

    Returns:
        An operator keeping the events whose ``agent`` is ``name``.

    Raises:
        InvalidArgumentError: ``name`` is not a string.
    """
    return from_agent_(name)


LEASE_POLL = Backoff(base=0.01, factor=2.0, cap=0.2)
"""How often ``with_lease`` asks again for a lease held elsewhere: 10 ms, doubling, every
200 ms at most. A release in the same process wakes the waiters at once instead."""


def concat_steps(steps: Iterable[Observable[_T]]) -> Observable[_T]:
    """Subscribe to each step when the one before completed; each step starts on the scheduler.

    ``reactivex.concat_with_iterable`` with one defect fixed: it stores the next step's
    scheduled start after ``schedule`` returns, so on a multi-threaded scheduler a thread
    preempted there disposed the step *after* it, scheduled meanwhile, and the sequence
    stopped without completing. Here the order of assignment cannot cancel newer work (see
    :class:`rxreact.rx._ordered_serial.OrderedSerialDisposable`). ``steps`` may be a generator:
    it is advanced on the scheduler, after the previous step completed, so the code between
    two ``yield`` statements sees what the previous step did.

    ::

        steps:          a: -1-2|    b: (3|)    c: --4|
        concat_steps:   -1-2-3--4|

    An error of a step, or raised by the generator, ends the sequence. So does an exception
    the subscriber raises on a value: it goes to ``on_error`` and the step is disposed, instead
    of climbing back into the step (which may have emitted from a completion, a tool's thread
    or a timer, where nobody would hear it, or through a ``catch`` that would take it for the
    step's own failure)::

        steps:          a: -1-2-3|    b: --4|
        subscriber:     raises on 2
        concat_steps:   -1-2#             # the subscriber's error; b is never pulled

    Args:
        steps: the Observables, pulled one at a time.

    Returns:
        The steps' notifications, one step after the other.
    """
    return concat_steps_(steps)


def timeout_with(
    seconds: float, fallback: Observable[_T], scheduler: abc.SchedulerBase
) -> Callable[[Observable[_T]], Observable[_T]]:
    """Switch to ``fallback`` when the source is silent for ``seconds`` (first item included).

    RxPY's ``timeout``, with the race between the timer and the source decided under a lock:
    exactly one of them wins, whichever threads they arrive on.

    ::

        source:     -a---b--------c|
        timeout_with(3, x|):
        result:     -a---b---x|

    Args:
        seconds: the longest silence allowed, restarted by every item.
        fallback: what follows a timeout (e.g. ``reactivex.throw(error)``).
        scheduler: where the timer runs.

    Returns:
        An operator ``Observable[T] -> Observable[T]``.
    """
    return timeout_with_(seconds, fallback, scheduler)


def deliver_on(
    scheduler: abc.SchedulerBase, max_buffer: int | None = 1024
) -> Callable[[Observable[_T]], Observable[_T]]:
    """Deliver the source's notifications on ``scheduler``, in batches, with a bounded buffer.

    The ``publishOn(boundedElastic)`` of the Reactor design: the producer (the HTTP reader
    thread) hands items over and goes back to the socket; the consumer side runs on
    ``scheduler``. Unlike RxPY's ``observe_on``, which schedules one action per item, one
    scheduled action drains everything queued so far.

    ::

        source:   -a-b-c-d-----e-|        (I/O thread)
                  deliver_on(pool)
        result:   ---a-b-c-d-----e-|      (pool thread; a..d may arrive in one drain)

    When ``max_buffer`` items wait undelivered, the producer is held back until the consumer
    catches up (backpressure for slow subscribers: at most ``max_buffer`` queued plus one
    drained batch being delivered), except on a thread that subscribed or drains (one
    thread can't wait for itself, as under a ``TestScheduler``); there the buffer grows. A
    producer on rxreact's shared I/O loop (``OpenAIChatModel(io="loop")``) is not blocked,
    which would stall every stream: its :class:`~rxreact.rx._valve.Valve` is closed instead and
    it stops reading after the current read's events until the consumer drains.

    Args:
        scheduler: where ``on_next`` / ``on_error`` / ``on_completed`` run.
        max_buffer: items queued before the producer is held back; ``None`` for unbounded.

    Returns:
        An operator ``Observable[T] -> Observable[T]``.
    """

    return deliver_on_(scheduler, max_buffer)


def process_chunk(state: RoundState) -> Callable[[Observable[ChatChunk]], Observable[Any]]:
    """Turn a round's chunks into agent events live, deciding the round's mode on the way.

    The first chunk carrying text or a tool call decides the mode (see
    :mod:`rxreact.agent.round` for the whole decision table)::

        chunks:  -r--t1--t2--|                 r: role only, t: text
        events:  ----D,T1--T2--|               D: round_mode_decided(final_answer), T: text_delta

        chunks:  -r--c0--a--a--|               c: tool-call delta with name, a: argument piece
        events:  ----D,S,A--A--A--|            D: round_mode_decided(tool_call),
                                               S: tool_call_started, A: tool_call_args_delta

        chunks:  -t1--c0--|                    a sentence, then a call: the round switches
        events:  -D,T1--D',S--|                D': round_mode_decided(tool_call)

    Args:
        state: the round's :class:`~rxreact.agent.round.RoundState`, updated as chunks pass.

    Returns:
        An operator ``Observable[ChatChunk] -> Observable[AgentEvent]``.
    """

    return process_chunk_(state)


def finish_round(state: RoundState) -> Callable[[Observable[Any]], Observable[Any]]:
    """Close a round: when the source completes, emit ``round_finished`` then complete.

    ::

        events:  -a--b--|
        result:  -a--b--F|          F: round_finished(mode, finish_reason, usage)

    Errors pass through unchanged (no ``round_finished`` for a failed round). An exception the
    subscriber raises on ``round_finished`` ends the round with it (``on_error``): it is sent
    from the source's completion, so nothing upstream is left to hear it::

        events:  -a--b--|
        result:  -a--b--(F#)        the subscriber raised on F

    Args:
        state: the round's state, read once at completion.

    Returns:
        An operator ``Observable[AgentEvent] -> Observable[AgentEvent]``.
    """

    return finish_round_(state)


def output_partials(round_number: int) -> Callable[[Observable[Any]], Observable[Any]]:
    """After each ``text_delta`` of a typed run's round, the answer parsed so far, when it
    changed (an ``output_partial``); withdrawn by an ``output_reset`` if the round then calls
    tools::

        round:   -m-t--t---t--t----F|      t: text_delta
        result:  -m-tp-t---tp-tp---F|      p: output_partial (the value changed)

        round:   -m-t--t-M-c-|             M: round_mode_decided(tool_call)
        result:  -m-tp-t-MR-c-|            R: output_reset

    Args:
        round_number: the round whose events pass.

    Returns:
        An operator ``Observable[AgentEvent] -> Observable[AgentEvent]``.
    """
    return output_partials_(round_number)


def run_tools(
    tools: Mapping[str, Tool[..., Any]],
    *,
    round_number: int,
    results: list[ToolResult | None],
    scheduler: abc.SchedulerBase,
    tools_scheduler: abc.SchedulerBase,
    default_timeout: float | None = None,
    trace: RunTracer | None = None,
    approvals: Approvals | None = None,
    approval_timeout: float | None = None,
    caller: CallingRun | None = None,
) -> Callable[[Observable[ToolCall]], Observable[Any]]:
    """Run every tool call of a round concurrently; complete when all have a result.

    Each call becomes ``tool_execution_started`` then ``tool_result``; results arrive in
    completion order, and ``results[i]`` receives the result of the ``i``-th call so the
    history can be written in call order::

        calls:    (a b c)|
        a:        S----------Ra|               S: tool_execution_started
        b:        S---Rb|                      R: tool_result
        c:        S------Rc|
        result:   SSS-Rb-Rc--Ra|               (completes after the last result)

    Unknown tools, arguments that are not JSON or fail the schema, exceptions and timeouts
    become results with ``is_error=True`` whose text tells the model what went wrong; they
    never reach ``on_error``.

    Args:
        tools: the tools by name.
        round_number: the round the events belong to.
        results: one slot per call, filled by position.
        scheduler: the clock for durations and timeouts.
        tools_scheduler: where sync tools run.
        default_timeout: seconds for tools without their own timeout; ``None``: no limit.
        trace: the run's tracer: each call in an ``execute_tool`` span (``None``: no tracing).
        approvals: where calls of tools that require approval wait for a decision
            (``tool_approval_requested`` first; ``None``: such tools run unasked).
        approval_timeout: seconds a call waits for a decision before it counts as denied.
        caller: the run these calls belong to; an agent tool's call runs its agent nested in
            it, the child run's events between the call's ``S`` and ``R`` (``None``: agent
            tools run as plain tools, their events unseen).

    Returns:
        An operator ``Observable[ToolCall] -> Observable[AgentEvent]``.
    """

    return run_tools_(
        tools,
        round_number=round_number,
        results=results,
        scheduler=scheduler,
        tools_scheduler=tools_scheduler,
        default_timeout=default_timeout,
        trace=trace,
        approvals=approvals,
        approval_timeout=approval_timeout,
        caller=caller,
    )


def retry_unstarted(
    max_retries: int = 2, backoff: Backoff | None = None
) -> Callable[[Observable[_T]], Observable[_T]]:
    """Resubscribe to a failed cold source, with backoff, while it has emitted nothing.

    Retries only retryable :class:`~rxreact.ModelError` s (429, 5xx, connection errors, cut
    streams), honours a 429's ``Retry-After`` (see :mod:`rxreact.model.retry_policy`), and waits
    on the subscribe-time scheduler, so a ``TestScheduler`` runs the backoff in virtual time::

        source:   #        (503)   then   #   then   -a-b|
        result:   -----------------------------------a-b|   (waits 0.5 s, then 1.0 s)

        source:   -a-#
        result:   -a-#                  (something was emitted: no retry, it would repeat "a")

    Args:
        max_retries: retries after the first attempt.
        backoff: the wait policy (default ``Backoff()``: 0.5 s, doubling, capped at 8 s).

    Returns:
        An operator ``Observable[T] -> Observable[T]``.
    """

    return retry_unstarted_(max_retries, backoff or Backoff())


def with_lease(
    memory: ChatMemory,
    conversation_id: str,
    body: Callable[[Lease], Observable[_T]],
    *,
    owner: str,
    ttl: float,
    on_busy: OnBusy = "queue",
    busy_timeout: float | None = 30.0,
    poll: Backoff = LEASE_POLL,
    take_over: Lease | None = None,
) -> Observable[_T]:
    """Subscribe to ``body(lease)`` once the conversation's lease is granted; hold it until the
    body ends.

    The lease is taken with ``memory.try_acquire`` on the subscribe-time scheduler (never on
    the subscribing thread), renewed every ``ttl / 3`` while the body runs, and released the
    moment the body completes, fails or is disposed, before the observer hears of it. While
    another run holds the conversation, ``"queue"`` asks again on timers (``poll`` backoff; a
    release in this process, or one the memory announces, wakes the oldest waiter at once),
    holding no thread; ``"reject"`` fails at once. The body's events pass straight through
    (no lock, no extra layer). A renewal that finds the lease lost stops renewing: the body's
    fenced ``append(..., lease=lease)`` is then refused, and that error ends the run::

        lease held by another run until 3, free after:
        body(lease):            a-b-|
        with_lease(queue):      ---a-b-|          (lease taken at 3, released at 6)
        with_lease(reject):     #                 ConversationBusyError at once
        busy_timeout=2:         --#               ConversationBusyError after 2

        lease lost at 4 (expired while the process was paused, taken by another run):
        body(lease):            a-b-------#       its fenced commit raises ConversationBusyError
        with_lease(...):        a-b-------#

        take_over=old (a stopped owner's lease, held until 9 and not granted again since):
        body(successor):        a-b-|
        with_lease(...):        a-b-|             handed over at 0: old is fenced out from then

    Args:
        memory: the backend that grants leases.
        conversation_id: the conversation to hold.
        body: the work to do while holding it, given the lease (for a fenced ``append``).
        owner: who holds the lease (unique per run).
        ttl: seconds the lease lasts without a renewal.
        on_busy: ``"queue"`` to wait for the lease, ``"reject"`` to fail while it is held.
        busy_timeout: the longest wait in ``"queue"`` mode, in seconds; ``None``: no limit.
        poll: the wait between attempts while the lease is held elsewhere.
        take_over: a lease to take over at once (``memory.hand_over``) if it is still the
            conversation's latest grant, live or not: the run that resumes a stopped owner's
            work does not wait for its lease to lapse. When it was granted again since, or the
            memory has no ``hand_over``, the lease is waited for as without it.

    Returns:
        The body's notifications; :class:`~rxreact.ConversationBusyError` when the lease could
        not be had, :class:`~rxreact.ChatMemoryError` when the backend failed to grant it.
    """

    return with_lease_(
        memory,
        conversation_id,
        body,
        owner=owner,
        ttl=ttl,
        on_busy=on_busy,
        busy_timeout=busy_timeout,
        poll=poll,
        take_over=take_over,
    )
