"""Agent events as AG-UI events: the AG-UI 1.0 protocol's HTTP+SSE stream (CopilotKit and the
frameworks that speak it), encoded with the official ``ag-ui-protocol`` models.

One rxreact run can span several AG-UI runs: a run that waits for the client (a tool call
that needs approval, or a call of a tool the front end declared) ends its AG-UI run there,
and the next request continues the same rxreact run. Each AG-UI run is a *segment* of the
event sequence::

    (segment start)             RUN_STARTED, then what was open at the start reopened (the
                                round's step, a text or reasoning message, tool calls)
    round_started(n)            [STEP_FINISHED "round n-1"], STEP_STARTED "round n"
    reasoning_delta             REASONING_START + REASONING_MESSAGE_START (first),
                                REASONING_MESSAGE_CONTENT
    text_delta                  [reasoning closed], TEXT_MESSAGE_START (first),
                                TEXT_MESSAGE_CONTENT
    tool_call_started           [text closed], TOOL_CALL_START (parentMessageId: the round's
                                assistant message)
    tool_call_args_delta        TOOL_CALL_ARGS
    round_finished              [text closed], TOOL_CALL_END per call
    tool_result                 TOOL_CALL_RESULT (not for a client-side tool: the client sent it)
    tool_approval_requested     an interrupt {id: call id, reason: "tool_approval"}, or for a
                                client-side tool a pending tool call, once every call of the
                                round has begun: STEP_FINISHED, RUN_FINISHED with outcome
                                "interrupt" (or "success" with pendingToolCallIds); the
                                segment ends, the run waits
    final_answer                STEP_FINISHED, RUN_FINISHED "success" (result: the
                                output_type value, usage)
    on_error                    [everything open closed], RUN_ERROR; RUN_FINISHED "cancelled"
                                for a cancelled run
    events of agent tools       nothing but their approval requests (interrupts as above):
    (path != ())                the call's TOOL_CALL_RESULT is the agent tool's answer

Every event of one agent event is sent with that event's ``seq`` as its SSE ``id``; the
events a segment makes up (its RUN_STARTED, reopenings, the closing of a failed run) have
none. The mapping is a function of the whole event sequence from ``seq`` 1, so a segment
that starts later (a resumed stream, the continuation after a pause) replays the run through
it and sends only what comes after its start: the message and tool call ids the client
holds stay valid.

No Starlette here: :func:`to_ag_ui_events` is an Rx operator usable on any run's events; the
endpoint is :mod:`rxreact.serve.ag_ui._routes`. Needs the ``ag-ui`` extra.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from ag_ui.core import BaseEvent, RunFinishedEvent
from reactivex import Observable, abc

from rxreact.events import FinalAnswer
from rxreact.serve.ag_ui._mapper import APPROVAL_REASON, Mapper

__all__ = ["APPROVAL_REASON", "AGUIChunk", "to_ag_ui_events"]


@dataclass(frozen=True, slots=True)
class AGUIChunk:
    """One AG-UI event and the ``seq`` of the agent event it came from."""

    seq: int | None
    """The agent event's ``seq`` (the SSE ``id``); ``None`` for the events a segment makes up."""
    event: BaseEvent
    """The event, an ``ag_ui.core`` model."""

    def to_json(self) -> dict[str, Any]:
        """The event as the protocol's JSON object (camelCase, unset fields left out)."""
        data: dict[str, Any] = self.event.model_dump(mode="json", by_alias=True)
        return data

    def to_sse(self) -> str:
        """The event as one SSE event."""
        data = self.event.model_dump_json(by_alias=True)
        return f"data: {data}\n\n" if self.seq is None else f"id: {self.seq}\ndata: {data}\n\n"


def to_ag_ui_events(
    thread_id: str,
    run_id: str,
    *,
    after: int = 0,
    resume: Collection[str] = (),
    waiting: Collection[str] = (),
    client_tools: Collection[str] = (),
    interrupts: bool = True,
    id_prefix: str | None = None,
) -> Callable[[Observable[Any]], Observable[AGUIChunk]]:
    """Map a run's events (from its first, ``seq`` 1) to one AG-UI segment.

    ::

        events:  -R1--T--T--F|          R: round_started, T: text_delta, F: final_answer
        result:  -(rs,ss)--(ts,tc)--tc--(te,sf,rf)|
                                        rs: RUN_STARTED, ss: STEP_STARTED, ts/tc/te:
                                        TEXT_MESSAGE_START/CONTENT/END, sf: STEP_FINISHED,
                                        rf: RUN_FINISHED

        events:  -R1--C--A--RF--Q--...  C: tool_call_started, A: args, RF: round_finished,
                                        Q: tool_approval_requested (the run waits)
        result:  -(rs,ss)--cs--ca--ce--(sf,rf)|   rf: RUN_FINISHED outcome "interrupt"

        events:  -R1--T--#              the run failed
        result:  -(rs,ss)--(ts,tc)--(te,sf,re)|   re: RUN_ERROR; no error out

    Args:
        thread_id: ``threadId`` of RUN_STARTED / RUN_FINISHED (the conversation).
        run_id: ``runId`` of RUN_STARTED / RUN_FINISHED (the client's run of this segment).
        after: events with ``seq <= after`` update the state but are not sent: the
            ``Last-Event-ID`` of a resumed stream.
        resume: tool call ids the client answers now (results of client-side tools,
            decided interrupts): the segment starts after the pause that waited for them.
        waiting: the calls that still wait after the answers of ``resume``: if that pause
            has some, the segment ends at once with them (RUN_STARTED, its step reopened and
            finished, RUN_FINISHED naming them), so the client answers the rest.
        client_tools: the names of the tools the front end runs (their calls wait for it).
        interrupts: a ``tool_approval_requested`` is an interrupt for the client to answer
            (``False``: an approver on the server decides, the client is not asked).
        id_prefix: what message ids start with (default ``run_id``); the same for every
            segment of one rxreact run (the server uses the run's id).

    Returns:
        An operator ``Observable[AgentEvent] -> Observable[AGUIChunk]``. It completes at the
        end of the segment: the run's end, or a pause (the run goes on without it).
    """
    clients = frozenset(client_tools)
    answered = frozenset(resume)
    left = frozenset(waiting)

    def operator(source: Observable[Any]) -> Observable[AGUIChunk]:
        def subscribe(
            observer: abc.ObserverBase[AGUIChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            mapper = Mapper(
                thread_id,
                run_id,
                id_prefix or run_id,
                clients,
                interrupts,
                None if answered else after,
                answered,
                left,
            )
            count = 0

            def send(seq: int | None, events: list[BaseEvent]) -> None:
                if not mapper.began:
                    mapper.began = True
                    for opening in mapper.opening():
                        observer.on_next(AGUIChunk(None, opening))
                for event in events:
                    observer.on_next(AGUIChunk(seq, event))

            def on_next(event: Any) -> None:
                nonlocal count
                if mapper.ended:
                    return
                count += 1
                seq = getattr(event, "seq", None) or count
                try:
                    # The opening describes the state before this event.
                    sending = mapper.start is not None and seq > mapper.start
                    if sending and not mapper.began:
                        send(seq, [])
                    events = mapper.feed(event)
                    ending = mapper.pause(seq)
                except Exception as error:  # a bug in the mapping, not the run's error
                    mapper.ended = True
                    observer.on_error(error)
                    return
                if sending:
                    send(seq, events + (ending or []))
                elif ending:  # a continuation whose pause still waits for some calls
                    send(None, ending)
                if ending or (isinstance(event, FinalAnswer) and not event.path):
                    if not mapper.began:  # everything was before the start: an empty segment
                        send(None, [RunFinishedEvent(thread_id=thread_id, run_id=run_id)])
                    mapper.ended = True
                    observer.on_completed()

            def on_error(error: Exception) -> None:
                if mapper.ended:
                    return
                mapper.ended = True
                send(None, mapper.fail(error))
                observer.on_completed()

            def on_completed() -> None:
                if mapper.ended:
                    return
                mapper.ended = True
                if not mapper.began:
                    send(None, [RunFinishedEvent(thread_id=thread_id, run_id=run_id)])
                observer.on_completed()

            return source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return operator
