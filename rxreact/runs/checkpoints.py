"""Checkpoints: what a run on a durable log records of each finished step, so another process
can resume it without repeating that step.

With a durable event log (:class:`~rxreact.SQLiteEventLog`, :class:`~rxreact.RedisEventLog`)
a hot run writes, beside its events and never among them (subscribers do not see
checkpoints, and ``seq`` is not touched):

- ``start``: the question, the conversation (and the run's lease on it), the agent's name
  and tool names;
- ``response``: after each completed model response, the assistant message it added (with
  its tool calls and reasoning replay items) and the run's counters;
- ``tool``: after each tool result, the result as the model will read it;
- ``note``: another message the run added to its turn (a judge's revision request);
- ``lease``: the conversation lease a resumed run took over (the next one to resume the run
  takes it over from there).

Writes are **write-ahead**: the step that depends on a checkpoint (the tools after a
response, the next round after the tool results, the memory commit after an answer) starts
only once the log committed it. A checkpoint travels in the same batch as the events queued
with it, so a step costs at most one more write, never a write per chunk.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from reactivex import Observable, abc
from reactivex.disposable import Disposable

from rxreact.errors import RunError
from rxreact.events import ToolResult
from rxreact.memory.lease import Lease
from rxreact.messages import Message, Usage
from rxreact.runs.parking import ParkingWriter

__all__ = [
    "Checkpoint",
    "CheckpointWriter",
    "Checkpointer",
    "decode_checkpoint",
    "encode_checkpoint",
]

Kind = Literal["start", "response", "tool", "note", "lease"]


class Checkpoint(BaseModel):
    """One finished step of a run (see the module's docstring for each ``kind``)."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    kind: Kind
    round: int = 0
    """The round the step belongs to."""
    messages: tuple[Message, ...] = ()
    """What the step added to the run's turn (start: the question; response: the assistant
    message; note: the added message)."""
    result: ToolResult | None = None
    """``tool``: the result event, as the model will read it (its ``seq`` is not kept)."""
    forced: bool = False
    """``response``: the round was the forced last one."""
    usage: Usage | None = None
    """The run's total usage so far."""
    usage_by_purpose: dict[str, Usage] = {}
    revisions: int = 0
    conversation_id: str | None = None
    """``start``: the conversation the run reads and extends."""
    agent: str | None = None
    """``start``: the name of the agent that runs it; ``response``: of the agent that ran the
    round (another one after a handoff)."""
    tools: tuple[str, ...] = ()
    """``start``: the names of the agent's tools."""
    lease: Lease | None = None
    """``start``, ``lease``: the run's lease on its conversation, which a process resuming
    the run takes over at once (absent from checkpoints written before leases were kept)."""
    deps: bool = False
    """``start``: the run was given ``deps`` (which are never recorded: a process resuming
    the run makes its own with ``ReactAgent(deps_factory=)``)."""
    user: str | None = None
    """``start``: the user a server started the run for."""


_CHECKPOINT: TypeAdapter[Checkpoint] = TypeAdapter(Checkpoint)


def encode_checkpoint(checkpoint: Checkpoint) -> bytes:
    """The stored form: one JSON object."""
    return _CHECKPOINT.dump_json(checkpoint)


def decode_checkpoint(data: bytes | str, where: str) -> Checkpoint:
    """A stored checkpoint; a corrupt one is a :class:`~rxreact.RunError` naming ``where``."""
    try:
        return _CHECKPOINT.validate_json(data)
    except (ValidationError, ValueError, TypeError) as error:
        raise RunError(f"checkpoint {where} is corrupt: {error}") from error


@runtime_checkable
class CheckpointWriter(Protocol):
    """A run writer of a durable log: it also records checkpoints."""

    def checkpoint(self, body: bytes, on_sent: Callable[[bool], None]) -> None:
        """Queue ``body`` with the run's events; ``on_sent(committed)`` once it was written
        (or given up)."""
        ...


class Checkpointer:
    """A run's checkpoints on their way to the log, and the barrier the next step waits on."""

    __slots__ = ("_failed", "_lock", "_pending", "_waiters", "_writer")

    def __init__(self, writer: CheckpointWriter) -> None:
        self._writer = writer
        self._lock = threading.Lock()
        self._pending = 0
        self._failed = False  # a checkpoint was not written: no step may go on after it
        self._waiters: list[abc.ObserverBase[Any]] = []

    def record(self, checkpoint: Checkpoint) -> None:
        """Queue ``checkpoint`` (it is written with the events queued around it)."""
        with self._lock:
            self._pending += 1
        self._writer.checkpoint(encode_checkpoint(checkpoint), self._sent)

    def unpark(self) -> None:
        """Queue "running again" for a parked run (:mod:`rxreact.runs.parking`): the next
        :meth:`written` waits for it too, so nothing runs before the log stops saying
        "parked". A no-op when the run is not parked."""
        writer = self._writer
        if not isinstance(writer, ParkingWriter) or not writer.parked:
            return
        with self._lock:
            self._pending += 1
        writer.unpark(self._sent)

    def _sent(self, committed: bool) -> None:
        with self._lock:
            self._pending -= 1
            self._failed = self._failed or not committed
            if self._pending:
                return
            waiters, self._waiters = self._waiters, []
        for observer in waiters:
            self._release(observer)

    def _release(self, observer: abc.ObserverBase[Any]) -> None:
        if self._failed:  # fenced (another process owns the run now) or the log is unwritable
            observer.on_error(
                RunError(
                    "a checkpoint of this run was not written: the run stops here, so "
                    "that no step runs without its record"
                )
            )
        else:
            observer.on_completed()

    def written(self) -> Observable[Any]:
        """Completes, with no event, once every checkpoint recorded so far is committed;
        errors with :class:`~rxreact.RunError` if one of them could not be.

        ::

            record(a) record(b)   ---a-written---b-written--->
            written():            ----------------------|
            (b not written)       ----------------------#
        """

        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            with self._lock:
                if self._pending:
                    self._waiters.append(observer)
                    return Disposable(lambda: self._forget(observer))
            self._release(observer)
            return Disposable()

        return Observable(subscribe)

    def _forget(self, observer: abc.ObserverBase[Any]) -> None:
        with self._lock:
            if observer in self._waiters:
                self._waiters.remove(observer)
