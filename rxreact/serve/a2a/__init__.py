"""Agent events as A2A task updates: one run is one A2A task.

::

    (subscription)              Task {id, contextId, status: WORKING}   (always first)
    text_delta                  TaskArtifactUpdateEvent "answer", the delta appended
                                (the run's first text creates the artifact: append false)
    round_finished (tool_call)  TaskStatusUpdateEvent WORKING, a message per round:
                                text "→ name({args})" per call, data {"toolCalls": [...]}
    tool_approval_requested     TaskStatusUpdateEvent WORKING, "… waits for approval of name"
    tool_result                 TaskStatusUpdateEvent WORKING, text "← name: <content>",
                                data {"toolResult": {...}}
    final_answer                TaskArtifactUpdateEvent "answer" replaced by the final text
                                (append false, lastChunk true; a data part with a typed
                                ``output``), then TaskStatusUpdateEvent COMPLETED
    on_error                    TaskStatusUpdateEvent FAILED with the error's text, or
                                CANCELED for a cancelled run; the updates complete

Every update carries the run event's ``seq`` in its ``metadata`` (``{"seq": n}``): the cursor
a client gives back (``Last-Event-ID``) to resubscribe after that event. Text a round writes
before it turns out to call a tool is streamed into the answer as it comes; the final answer
replaces it (an A2A artifact update without ``append`` is a replacement), so a client that
folds the updates ends with exactly the answer. Reasoning deltas are not sent: A2A has no
place for a model's thinking.

No Starlette here: :func:`to_a2a_events` is an Rx operator usable on any run's events, and
:func:`apply_update` folds its output into a ``Task``; the JSON-RPC server is
:mod:`rxreact.serve.a2a._routes`. Needs the ``a2a`` extra (``a2a-sdk``, whose protobuf types
these are).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from a2a.types.a2a_pb2 import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Struct, Value
from pydantic_core import to_jsonable_python
from reactivex import Observable

from rxreact.errors import RunCancelledError
from rxreact.events import (
    FinalAnswer,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolApprovalRequested,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolResult,
)
from rxreact.serve._client_errors import error_text
from rxreact.serve._mapping import mapped_events

__all__ = ["ANSWER_ARTIFACT", "A2AUpdate", "apply_update", "new_task", "to_a2a_events"]

A2AUpdate = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent
"""What a task's stream carries (the ``task``, ``statusUpdate`` and ``artifactUpdate`` of an
A2A ``StreamResponse``)."""

ANSWER_ARTIFACT = "answer"
"""The ``artifactId`` of the run's answer."""

MAX_TOOL_TEXT = 2000
"""Characters of a tool's arguments or result in a status message's text (the rest: …)."""

TERMINAL_STATES = frozenset(
    {TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED}
)


def new_task(task_id: str, context_id: str) -> Task:
    """The task of a run in progress, with nothing streamed yet."""
    return Task(id=task_id, context_id=context_id, status=_status(TaskState.TASK_STATE_WORKING))


@dataclass
class _Mapper:
    task_id: str
    context_id: str
    answer_started: bool = False
    calls: dict[int, list[str]] = field(default_factory=dict)  # index -> [id, name, args]

    def feed(self, event: Any) -> list[A2AUpdate]:
        seq = getattr(event, "seq", 0)
        if isinstance(event, TextDelta):
            append, self.answer_started = self.answer_started, True
            return [self._artifact([Part(text=event.delta)], seq, append=append)]
        if isinstance(event, RoundStarted):
            self.calls = {}
        elif isinstance(event, ToolCallStarted):
            self.calls[event.index] = [event.call_id, event.name, ""]
        elif isinstance(event, ToolCallArgsDelta) and event.index in self.calls:
            self.calls[event.index][2] += event.delta
        elif isinstance(event, RoundFinished) and self.calls:
            text = "".join(f"→ {name}({_short(args)})\n" for _, name, args in self.calls.values())
            calls = [{"id": i, "name": n, "arguments": a} for i, n, a in self.calls.values()]
            return [self._working(text, {"toolCalls": calls}, seq)]
        elif isinstance(event, ToolApprovalRequested):
            data = {"approvalRequested": {"id": event.call_id, "name": event.name}}
            return [self._working(f"… waits for approval of {event.name}\n", data, seq)]
        elif isinstance(event, ToolResult):
            mark = "✗" if event.is_error else "←"
            result = {
                "id": event.call_id,
                "name": event.name,
                "content": event.content,
                "isError": event.is_error,
            }
            text = f"{mark} {event.name}: {_short(event.content)}\n"
            return [self._working(text, {"toolResult": result}, seq)]
        elif isinstance(event, FinalAnswer):
            parts = [Part(text=event.text)]
            if event.output is not None:
                parts.append(Part(data=_value(event.output)))
            answer = self._artifact(parts, seq, append=False, last=True)
            extra: dict[str, Any] = {"rounds": event.rounds, "forced": event.forced}
            if event.usage is not None:
                extra["usage"] = event.usage.model_dump(mode="json", exclude_none=True)
            done = self._status(TaskState.TASK_STATE_COMPLETED, None, seq, extra)
            return [answer, done]
        return []

    def opening(self) -> list[A2AUpdate]:
        """The task, before any event (a resubscription reading from a ``seq`` too)."""
        return [new_task(self.task_id, self.context_id)]

    def fail(self, error: BaseException) -> list[A2AUpdate]:
        if isinstance(error, RunCancelledError):
            return [self._status(TaskState.TASK_STATE_CANCELED, self._message(str(error)), 0)]
        return [self._status(TaskState.TASK_STATE_FAILED, self._message(error_text(error)), 0)]

    def _artifact(
        self, parts: list[Part], seq: int, *, append: bool, last: bool = False
    ) -> TaskArtifactUpdateEvent:
        return TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=Artifact(artifact_id=ANSWER_ARTIFACT, name="answer", parts=parts),
            append=append,
            last_chunk=last,
            metadata=_struct({"seq": seq}),
        )

    def _working(self, text: str, data: dict[str, Any], seq: int) -> TaskStatusUpdateEvent:
        message = self._message(text, data, seq)
        return self._status(TaskState.TASK_STATE_WORKING, message, seq)

    def _message(self, text: str, data: dict[str, Any] | None = None, seq: int = 0) -> Message:
        parts = [Part(text=text)]
        if data is not None:
            parts.append(Part(data=_value(data)))
        return Message(
            message_id=f"{self.task_id}:{seq}" if seq else f"{self.task_id}:end",
            context_id=self.context_id,
            task_id=self.task_id,
            role=Role.ROLE_AGENT,
            parts=parts,
        )

    def _status(
        self,
        state: TaskState,
        message: Message | None,
        seq: int,
        extra: dict[str, Any] | None = None,
    ) -> TaskStatusUpdateEvent:
        metadata = {"seq": seq, **(extra or {})} if seq else dict(extra or {})
        return TaskStatusUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            status=_status(state, message),
            metadata=_struct(metadata),
        )


def to_a2a_events(
    task_id: str, context_id: str
) -> Callable[[Observable[Any]], Observable[A2AUpdate]]:
    """Map a run's events to the updates of its A2A task (see the module for the table).

    ::

        events:  -R1--T--T--F|          R: round_started, T: text_delta, F: final_answer
        result:  t-a--a--a--(A,c)|      t: the Task (working), a: answer text appended,
                                        A: the answer replaced by the final text,
                                        c: status completed
        events:  -R1--T--#              the run failed (or was cancelled)
        result:  t-a--a--f|             f: status failed (canceled); no error out

    The task comes at subscription, before any event: a resubscription reading the run
    from a ``seq`` starts with it as well.

    Args:
        task_id: the A2A task id (the server uses the run id, signed for its user).
        context_id: the A2A context id (the conversation).

    Returns:
        An operator ``Observable[AgentEvent] -> Observable[Task | TaskStatusUpdateEvent |
        TaskArtifactUpdateEvent]``.
    """

    return mapped_events(lambda: _Mapper(task_id, context_id))


def apply_update(task: Task, update: A2AUpdate) -> None:
    """Fold one update into ``task`` (in place), as an A2A client does.

    A status replaces the status (the message of the one before goes to the history); an
    artifact update appends to the artifact of its id, or replaces it.
    """
    if isinstance(update, Task):
        task.CopyFrom(update)
    elif isinstance(update, TaskStatusUpdateEvent):
        if task.status.HasField("message"):
            task.history.append(task.status.message)
        task.status.CopyFrom(update.status)
        task.metadata.update(_plain(update.metadata))
    else:
        new = update.artifact
        for artifact in task.artifacts:
            if artifact.artifact_id == new.artifact_id:
                if not update.append:
                    del artifact.parts[:]
                _append_parts(artifact, new)
                return
        task.artifacts.append(new)


def _append_parts(artifact: Artifact, new: Artifact) -> None:
    # Text deltas of one artifact join into one text part, as the answer reads.
    for part in new.parts:
        last = artifact.parts[-1] if artifact.parts else None
        if last is not None and last.HasField("text") and part.HasField("text"):
            last.text += part.text
        else:
            artifact.parts.append(part)


def _status(state: TaskState, message: Message | None = None) -> TaskStatus:
    status = TaskStatus(state=state)
    if message is not None:
        status.message.CopyFrom(message)
    status.timestamp.GetCurrentTime()
    return status


def _short(text: str) -> str:
    return text if len(text) <= MAX_TOOL_TEXT else text[:MAX_TOOL_TEXT] + "…"


def _struct(values: dict[str, Any]) -> Struct:
    struct = Struct()
    struct.update(values)
    return struct


def _value(value: Any) -> Value:
    # A typed answer (a pydantic model, a dataclass...) as plain JSON first.
    return ParseDict(to_jsonable_python(value, fallback=str), Value())


def _plain(struct: Struct) -> dict[str, Any]:
    plain: dict[str, Any] = MessageToDict(struct)
    return plain
