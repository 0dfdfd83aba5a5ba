"""Chunks → whole responses: tool-call deltas into tool calls, a stream into a ModelResponse.

Pure and synchronous: the agent feeds these from its per-round state, tests from lists.

Tool-call deltas are matched to calls with rules taken from recorded provider streams
(``shared/fixtures/streams``), in this order:

1. ``index`` given: the index names the call. Indexes are the provider's labels, not
   positions (some start at 1); a call's *position* is the order in which it first appeared.
   An index seen for the first time whose non-empty ``id`` belongs to a call that has no index
   yet joins that call (a provider that adds the index after the first delta).
2. no ``index``, non-empty ``id``: the call with that id, or a new call for a new id (Mistral
   sends whole calls this way).
3. neither: the call the previous delta went to, or a new call when there was none.

Two calls of one response with the same provider id (a provider bug) keep the first call's
id; the later ones get ``f"{id}_{n}"`` (``n`` from 2, unique in the response), recorded in
:attr:`ToolCallAssembler.renamed`, so each result answers its own call.

Within a call: the first non-empty ``id`` and ``name`` win. ``""`` and ``None`` never
overwrite anything, and a name is never concatenated: OpenAI's contract is that the name
arrives whole, and servers that repeat it on every delta would otherwise double it; a later,
different name is a provider bug and is ignored. Argument pieces are concatenated raw, so
invalid JSON reaches the agent as sent. A call that never gets an id is given
``f"{id_prefix}{position}"``, the same for the same stream.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from rxreact.messages import ReplayItem, ToolCall, Usage
from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta

__all__ = ["ResponseAssembler", "ToolCallAssembler", "ToolCallUpdate", "assemble"]


class ToolCallUpdate(NamedTuple):
    """What one delta did to its call: enough to emit live events without looking back.

    Emit "tool call started (position, id, name)" when ``started``, then "arguments delta
    (position, arguments)" whenever ``arguments`` is not empty. ``arguments`` is never
    non-empty before the call has started, so arguments events always follow the start.
    """

    position: int
    """0-based position of the call in the response, in order of first appearance."""
    started: bool
    """True on exactly one update per call: the first one at which its name is known."""
    id: str
    """The call's id so far: the provider's, or the synthesized one while it sent none."""
    name: str | None
    """The call's name; ``None`` until known (then ``started`` has not happened yet)."""
    arguments: str
    """Argument text to show now: this delta's piece, plus, on the ``started`` update, the
    pieces that arrived before the name was known. ``""`` when there is none."""


class _Call:
    __slots__ = ("id", "index", "name", "parts", "started")

    def __init__(self) -> None:
        self.id: str | None = None
        self.index: int | None = None
        self.name: str | None = None
        self.parts: list[str] = []
        self.started = False


class ToolCallAssembler:
    """Assembles the tool calls of one response from their deltas (rules: module docstring).

    Args:
        id_prefix: prefix of synthesized ids. The agent may make it unique per round
            (``"call_r2_"``), since some providers reject a history with repeated ids.
    """

    __slots__ = ("_by_id", "_by_index", "_calls", "_id_prefix", "_last", "renamed")

    def __init__(self, id_prefix: str = "call_") -> None:
        self._id_prefix = id_prefix
        self._calls: list[_Call] = []
        self._by_index: dict[int, int] = {}
        self._by_id: dict[str, int] = {}
        self._last: int | None = None
        self.renamed: dict[str, str] = {}
        """Ids given on receipt to calls whose provider id another call of the response
        already had: ``{unique id: the provider's id}``. The results answer the unique ids."""

    def __len__(self) -> int:
        """Number of calls seen so far."""
        return len(self._calls)

    def add(self, delta: ToolCallDelta) -> ToolCallUpdate:
        """Apply one delta; say which call it belongs to and what is new about it."""
        index, call_id, name, arguments = delta
        position = self._position(index, call_id or None)
        call = self._calls[position]
        if call_id and call.id is None:
            if call_id in self._by_id:
                # Two calls, one id (a provider bug): a strict API rejects the history, and
                # the second result would be taken for the first. The later call is renamed.
                call.id = self._unique(call_id)
                self.renamed[call.id] = call_id
            else:
                call.id = call_id
                self._by_id[call_id] = position
        if name and call.name is None:
            call.name = name
        if arguments:
            call.parts.append(arguments)
        self._last = position
        started = False
        shown = arguments or ""
        if not call.started:
            if call.name is None:
                shown = ""  # held until the call can be announced
            else:
                call.started = started = True
                shown = "".join(call.parts)
        return ToolCallUpdate(position, started, self._id(call, position), call.name, shown)

    def calls(self) -> tuple[ToolCall, ...]:
        """The calls so far, in position order (a call whose name never came has ``""``)."""
        return tuple(
            ToolCall(
                id=self._id(call, position), name=call.name or "", arguments="".join(call.parts)
            )
            for position, call in enumerate(self._calls)
        )

    def _position(self, index: int | None, call_id: str | None) -> int:
        if index is not None:
            position = self._by_index.get(index)
            if position is None:
                position = self._by_id.get(call_id) if call_id else None
                if position is None or self._calls[position].index is not None:
                    position = self._new()
                self._calls[position].index = index
                self._by_index[index] = position
            return position
        if call_id is not None:
            position = self._by_id.get(call_id)
            return self._new() if position is None else position
        return self._new() if self._last is None else self._last

    def _unique(self, call_id: str) -> str:
        taken = {call.id for call in self._calls}
        n = 2
        while f"{call_id}_{n}" in taken or f"{call_id}_{n}" in self._by_id:
            n += 1
        return f"{call_id}_{n}"

    def _new(self) -> int:
        self._calls.append(_Call())
        return len(self._calls) - 1

    def _id(self, call: _Call, position: int) -> str:
        return call.id if call.id is not None else f"{self._id_prefix}{position}"


class ResponseAssembler:
    """Joins the chunks of one streamed response into a :class:`ModelResponse`.

    Text and reasoning are joined (``None`` when only empty strings arrived), tool calls
    assembled by a :class:`ToolCallAssembler`, and the last non-null ``finish_reason`` and
    ``usage`` kept (usage often comes in its own trailing chunk, or on every chunk).
    """

    __slots__ = (
        "_finish_reason",
        "_id_prefix",
        "_provider_finish_reason",
        "_reasoning",
        "_replay",
        "_text",
        "_tool_calls",
        "_usage",
    )

    def __init__(self, id_prefix: str = "call_") -> None:
        self._id_prefix = id_prefix
        self._reset()

    def _reset(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._tool_calls = ToolCallAssembler(self._id_prefix)
        self._finish_reason: str | None = None
        self._usage: Usage | None = None
        self._replay: list[ReplayItem] = []
        self._provider_finish_reason: str | None = None

    @property
    def saw_finish_reason(self) -> bool:
        """Whether any chunk carried a finish reason (a stream cut short has none)."""
        return self._finish_reason is not None

    def add(self, chunk: ChatChunk) -> None:
        """Take one chunk into account."""
        if chunk.text:
            self._text.append(chunk.text)
        if chunk.reasoning:
            self._reasoning.append(chunk.reasoning)
        for delta in chunk.tool_calls:
            self._tool_calls.add(delta)
        if chunk.finish_reason is not None:
            self._finish_reason = chunk.finish_reason
        if chunk.usage is not None:
            self._usage = chunk.usage
        if chunk.replay:
            if getattr(chunk, "switch", None) is not None:
                # A FallbackModel moved to its next model: what came before is void.
                self._reset()
                return
            self._replay.extend(chunk.replay)
        if chunk.provider_finish_reason is not None:
            self._provider_finish_reason = chunk.provider_finish_reason

    def response(self) -> ModelResponse:
        """The response assembled from the chunks so far."""
        return ModelResponse(
            content="".join(self._text) or None,
            reasoning="".join(self._reasoning) or None,
            tool_calls=self._tool_calls.calls(),
            finish_reason=self._finish_reason,
            usage=self._usage,
            replay=tuple(self._replay),
            provider_finish_reason=self._provider_finish_reason,
        )


def assemble(chunks: Iterable[ChatChunk]) -> ModelResponse:
    """Assemble a whole stream of chunks into one :class:`ModelResponse`."""
    assembler = ResponseAssembler()
    for chunk in chunks:
        assembler.add(chunk)
    return assembler.response()
