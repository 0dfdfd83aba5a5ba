"""Chunks held back behind a window, so that a model failing inside it is never seen.

``hold="sentence"`` releases what streamed up to the last sentence end (the guardrails'
:func:`~rxreact.checks.guardrails.sentence_ends`); ``hold=N`` releases everything but the last
``N`` characters. Characters are those the subscriber would show: text, reasoning, and a tool
call's name and arguments, so a call cut half-way stays in the window. Chunks keep their order;
a text or reasoning chunk the release point falls inside is split there::

    chunks:           -"Hi. Th"--"ere is"--" sun."-f-|
    hold="sentence":  -"Hi. "--------------"There is sun."f|     (the end releases the rest)
    hold=4:           -"Hi"----". There"---" su"-----"n."f|
"""

from __future__ import annotations

from collections import deque

from rxreact.checks.guardrails import sentence_ends
from rxreact.messages import Usage
from rxreact.model.chunks import ChatChunk

__all__ = ["ChunkHold"]

_TAIL = 8  # characters kept to find a sentence end split across two chunks


def _size(chunk: ChatChunk) -> int:
    size = len(chunk.text or "") + len(chunk.reasoning or "")
    for delta in chunk.tool_calls:
        size += len(delta.name or "") + len(delta.arguments or "")
    return size


class ChunkHold:
    """One attempt's held chunks. Not thread-safe: one stream's chunks arrive serialized.

    Args:
        hold: ``"sentence"``, or the lag in characters.
    """

    __slots__ = ("_held", "_lag", "_queue", "_sentence", "_tail", "released", "usage")

    def __init__(self, hold: str | int) -> None:
        self._sentence = hold == "sentence"
        self._lag = 0 if isinstance(hold, str) else hold
        self._queue: deque[ChatChunk] = deque()
        self._held = 0  # characters in the queue
        self._tail = ""
        self.released = False
        """Whether any chunk has been released (then a failure must withdraw it)."""
        self.usage: Usage | None = None
        """The last usage the attempt reported (released or not)."""

    def add(self, chunk: ChatChunk) -> list[ChatChunk]:
        """Hold ``chunk``; returns the chunks to release now, in order."""
        if chunk.usage is not None:
            self.usage = chunk.usage
        self._queue.append(chunk)
        size = _size(chunk)
        self._held += size
        if self._sentence:
            if not size:
                return []
            window = self._tail + (chunk.text or "") + (chunk.reasoning or "")
            self._tail = window[-_TAIL:]
            end = sentence_ends(window)
            if end is None:
                return []
            return self._release(self._held - (len(window) - end))
        return self._release(self._held - self._lag)

    def flush(self) -> list[ChatChunk]:
        """Everything still held (the stream ended well)."""
        out = list(self._queue)
        self._queue.clear()
        self._held = 0
        self.released = self.released or bool(out)
        return out

    def _release(self, count: int) -> list[ChatChunk]:
        """The chunks from the head of the queue that hold the first ``count`` characters,
        the last one split if the point falls inside it, and the empty chunks right after."""
        queue = self._queue
        out: list[ChatChunk] = []
        while queue and count >= 0:
            head = queue[0]
            size = _size(head)
            if size <= count:
                if size == 0 and count == 0 and not out:
                    break  # nothing to release: an empty chunk waits with what follows
                out.append(queue.popleft())
                count -= size
                self._held -= size
                continue
            if count > 0 and not head.tool_calls and not (head.text and head.reasoning):
                # The first part is only the text; what else the chunk carries (a finish,
                # usage) stays with the rest.
                if head.text:
                    out.append(ChatChunk(text=head.text[:count], role=head.role))
                    queue[0] = head._replace(text=head.text[count:], role=None)
                else:
                    reasoning = head.reasoning or ""
                    out.append(ChatChunk(reasoning=reasoning[:count], role=head.role))
                    queue[0] = head._replace(reasoning=reasoning[count:], role=None)
                self._held -= count
            break
        if out:
            self.released = True
        return out
