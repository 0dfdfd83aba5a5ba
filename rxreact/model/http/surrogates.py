"""Lone UTF-16 surrogates in streamed text: paired across deltas, else replaced.

Some providers cut an astral character (an emoji) between two deltas as two JSON escapes,
``"\\ud83d"`` in one chunk and ``"\\ude00"`` in the next. Each chunk is then JSON with a lone
surrogate, which the fast parser rejects; :func:`~rxreact.model.openai.wire.parse_chunk`
reads such a chunk with the standard library's lenient parser and marks it a
:class:`SurrogateChunk`. From
that chunk on, :class:`SurrogatePairing` holds a trailing high surrogate of the text (and of
the reasoning) until the next delta, joins it with a leading low one, and replaces whatever
is still lone with U+FFFD, so no unencodable string ever reaches the events, the history or
the next request.
"""

from __future__ import annotations

import re

from rxreact.model.chunks import ChatChunk

__all__ = ["SurrogateChunk", "SurrogatePairing", "join_surrogates"]

_SURROGATE = re.compile("[\ud800-\udfff]")
_LONE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")


class SurrogateChunk(ChatChunk):
    """A chunk whose strings may hold lone surrogates (read by the lenient parser)."""

    __slots__ = ()


def join_surrogates(text: str) -> str:
    """``text`` with surrogate pairs made one character and lone surrogates U+FFFD."""
    if _SURROGATE.search(text) is None:
        return text
    text = _LONE.sub("\ufffd", text)
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")


class SurrogatePairing:
    """Pairs surrogates across the text (and the reasoning) deltas of one stream."""

    __slots__ = ("_reasoning", "_text")

    def __init__(self) -> None:
        self._text = ""
        self._reasoning = ""

    def pair(self, chunk: ChatChunk) -> ChatChunk:
        """The chunk with clean text and reasoning (a trailing high surrogate held back)."""
        text, self._text = _held_back(self._text, chunk.text)
        reasoning, self._reasoning = _held_back(self._reasoning, chunk.reasoning)
        arguments = tuple(
            d._replace(arguments=join_surrogates(d.arguments)) if d.arguments else d
            for d in chunk.tool_calls
        )
        return ChatChunk(text, reasoning, arguments, *chunk[3:])

    def flush(self) -> ChatChunk | None:
        """The end of the stream: a surrogate still held is lone (U+FFFD)."""
        if not (self._text or self._reasoning):
            return None
        chunk = ChatChunk(text="\ufffd" if self._text else None)
        if self._reasoning:
            chunk = chunk._replace(reasoning="\ufffd")
        self._text = self._reasoning = ""
        return chunk


def _held_back(held: str, piece: str | None) -> tuple[str | None, str]:
    """``(what to emit, what to hold)`` for the next piece of one text."""
    if piece is None:
        if not held:
            return None, ""
        return "\ufffd", ""  # a held high surrogate followed by no text at all is lone
    text = held + piece
    hold = ""
    if text and "\ud800" <= text[-1] <= "\udbff":
        text, hold = text[:-1], text[-1]
    return join_surrogates(text) or None, hold
