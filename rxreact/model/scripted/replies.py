"""A small vocabulary for scripting model replies.

Shared by :class:`~rxreact.model.scripted.model.ScriptedModel` (in-process, virtual time) and
:class:`~rxreact.testing.MockOpenAIServer` (real HTTP, real SSE).

A *reply* is what the model sends for one request: a sequence of :class:`ChatChunk` with
optional :class:`Pause` items between them (and a trailing :class:`Fail`, :class:`Hang` or
:class:`Disconnect`), or a whole :class:`HTTPErrorReply`. The builders below write the chunks
real providers send, so scripts stay short::

    script = [
        tool_call_reply(("get_weather", {"city": "Beijing"})),   # round 1
        text_reply("It is sunny in Beijing.", pieces=5),          # round 2
    ]
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from rxreact.messages import ChatRequest, Usage
from rxreact.model.chunks import ChatChunk, ToolCallDelta

__all__ = [
    "Disconnect",
    "Fail",
    "HTTPErrorReply",
    "Hang",
    "Pause",
    "RawSSE",
    "Reply",
    "ReplyItem",
    "Script",
    "split_text",
    "text_reply",
    "tool_call_reply",
]


@dataclass(frozen=True)
class Pause:
    """Wait this long (virtual seconds under a TestScheduler) before the next item."""

    seconds: float


@dataclass(frozen=True)
class Fail:
    """End the stream with this error (ScriptedModel); an in-stream error event (mock server)."""

    error: Exception


@dataclass(frozen=True)
class Hang:
    """Go silent until the client gives up or disconnects (tests timeouts and cancellation)."""


@dataclass(frozen=True)
class Disconnect:
    """Drop the connection without ``[DONE]`` (tests cut streams)."""


@dataclass(frozen=True)
class HTTPErrorReply:
    """Answer the request with an HTTP error instead of a stream."""

    status: int
    message: str = "error"
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers, e.g. ``{"Retry-After": "1"}``."""


@dataclass(frozen=True)
class RawSSE:
    """Send these bytes verbatim as the SSE body (mock server only): replays recordings."""

    data: bytes


ReplyItem: TypeAlias = ChatChunk | Pause | Fail | Hang | Disconnect
Reply: TypeAlias = Sequence[ReplyItem] | HTTPErrorReply | RawSSE
Script: TypeAlias = Sequence[Reply] | Callable[[ChatRequest], Reply]
"""Either the replies in request order, or a function from each request to its reply."""


def split_text(text: str, pieces: int | None = None, *, size: int | None = None) -> list[str]:
    """Cut ``text`` into ``pieces`` nearly equal parts, or into parts of ``size`` characters.

    With neither, one part per whitespace-separated word (the space kept on the word before).
    """
    if not text:
        return []
    if size is not None:
        return [text[i : i + size] for i in range(0, len(text), size)]
    if pieces is not None:
        pieces = max(1, min(pieces, len(text)))
        bounds = [round(i * len(text) / pieces) for i in range(pieces + 1)]
        return [text[a:b] for a, b in itertools.pairwise(bounds)]
    parts: list[str] = []
    for word in text.split(" "):
        if parts:
            parts[-1] += " "
        parts.append(word)
    return [p for p in parts if p]


def text_reply(
    text: str,
    pieces: int | None = None,
    *,
    size: int | None = None,
    reasoning: str | None = None,
    interval: float = 0.0,
    finish_reason: str = "stop",
    usage: Usage | None = None,
) -> list[ReplyItem]:
    """A reply that answers with ``text``: a role chunk, optional reasoning, the text in pieces,
    then a chunk with the finish reason (and usage, when given).

    ``interval`` puts a :class:`Pause` of that many seconds before every chunk after the first.
    """
    chunks: list[ChatChunk] = [ChatChunk(role="assistant")]
    if reasoning:
        chunks += [ChatChunk(reasoning=p) for p in split_text(reasoning)]
    chunks += [ChatChunk(text=p) for p in split_text(text, pieces, size=size)]
    chunks.append(ChatChunk(finish_reason=finish_reason, usage=usage))
    return _paced(chunks, interval)


def tool_call_reply(
    *calls: tuple[str, dict[str, Any] | str],
    text: str | None = None,
    ids: Sequence[str] | None = None,
    arg_piece: int = 8,
    interval: float = 0.0,
    usage: Usage | None = None,
) -> list[ReplyItem]:
    """A reply that calls tools, streamed the way OpenAI does it.

    Each call is ``(name, arguments)`` with arguments as a dict (JSON-encoded here) or a raw
    string (to script malformed JSON). Every delta carries ``index``; ``id`` and ``name`` come
    only on a call's first delta; arguments arrive ``arg_piece`` characters at a time. With
    ``text``, the reply first says that sentence, then calls (a late switch to tool mode).
    Ids default to ``call_0``, ``call_1``...
    """
    chunks: list[ChatChunk] = [ChatChunk(role="assistant")]
    if text:
        chunks += [ChatChunk(text=p) for p in split_text(text)]
    for i, (name, args) in enumerate(calls):
        raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        call_id = ids[i] if ids is not None else f"call_{i}"
        chunks.append(ChatChunk(tool_calls=(ToolCallDelta(i, call_id, name, ""),)))
        chunks += [
            ChatChunk(tool_calls=(ToolCallDelta(index=i, arguments=p),))
            for p in split_text(raw, size=max(1, arg_piece))
        ]
    chunks.append(ChatChunk(finish_reason="tool_calls", usage=usage))
    return _paced(chunks, interval)


def _paced(chunks: list[ChatChunk], interval: float) -> list[ReplyItem]:
    if interval <= 0:
        return list(chunks)
    items: list[ReplyItem] = []
    for i, chunk in enumerate(chunks):
        if i:
            items.append(Pause(interval))
        items.append(chunk)
    return items
