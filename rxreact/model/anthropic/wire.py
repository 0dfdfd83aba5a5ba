"""Anthropic's Messages API responses as chunks: the stream's events and a whole message.

A streamed message is a sequence of content blocks, each opened, filled and closed by index::

    message_start
      content_block_start(0)  content_block_delta(0)*  content_block_stop(0)
      content_block_start(1)  ...                      content_block_stop(1)
    message_delta            (stop_reason, cumulative usage)
    message_stop             (the terminal event: without it the message is incomplete)

with ``ping`` anywhere and ``error`` anywhere (the end). The mapping:

- ``text`` blocks → text deltas; ``tool_use`` blocks → tool-call deltas, indexed by the order
  of the tool blocks (the first carries id and name, then one per ``input_json_delta``);
  ``thinking`` → the reasoning channel (blocks joined by a blank line), and at the block's
  end the whole block with its ``signature`` as a :class:`~rxreact.messages.ReplayItem`
  (``provider="anthropic"``), also when it had no text, only a signature;
  ``redacted_thinking`` → a replay item, as given. Other block types (server tools,
  their results) and delta types (``citations_delta``) carry nothing for us and are skipped,
  never an error; they are kept for a ``pause_turn`` continuation (below).
- ``stop_reason`` → our finish reasons (:data:`FINISH_REASONS`), the raw value kept as
  ``provider_finish_reason``. ``pause_turn`` is not an end: the parser sets :attr:`paused`
  and the client sends the follow-up request (:mod:`rxreact.model.anthropic.client`).
- usage: ``message_start``'s, overwritten key by key by each ``message_delta``'s (which is
  cumulative, and on older servers carries only ``output_tokens``), sent once, with the
  finish reason. See :func:`~rxreact.model.anthropic._fields.usage_of`.

Nothing is emitted before the first content delta (``message_start`` and ``ping`` carry
nothing to show), so an ``overloaded_error`` event before it is retried like an HTTP 529.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json

from rxreact.errors import StreamInterruptedError
from rxreact.messages import ReplayItem, Usage
from rxreact.model.anthropic._fields import lenient_json, protocol_error, stream_error, usage_of
from rxreact.model.chunks import ChatChunk, ToolCallDelta
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.surrogates import SurrogateChunk, join_surrogates

__all__ = [
    "FINISH_REASONS",
    "PAUSE_TURN",
    "PROVIDER",
    "Carry",
    "MessagesStreamParser",
]

PROVIDER = "anthropic"
"""The tag of the replay items this wire format makes and takes back."""
PAUSE_TURN = "pause_turn"
"""The stop reason of a turn the server paused: continued with another request."""
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
"""Anthropic's stop reasons → ours; an unknown one ends the answer as ``stop``."""


def _new_chunk(fields: tuple[Any, ...]) -> ChatChunk:
    return tuple.__new__(ChatChunk, fields)


class Carry:
    """What a turn continued after ``pause_turn`` carries from one message to the next: the
    assistant content so far (sent back in the follow-up request), the usage so far, the
    number of tool calls (their indexes continue) and whether thinking text was shown."""

    __slots__ = ("content", "thought", "tools", "usage")

    def __init__(self) -> None:
        self.content: list[dict[str, Any]] = []
        self.usage: Usage | None = None
        self.tools: int = 0
        self.thought: bool = False

    def copy(self) -> Carry:
        """A copy for one attempt (a retried attempt starts from the same state)."""
        carry = Carry()
        carry.content, carry.usage = list(self.content), self.usage
        carry.tools, carry.thought = self.tools, self.thought
        return carry


class _Block:
    """One content block being streamed: its start payload and its delta pieces."""

    __slots__ = ("data", "kind", "ordinal", "pieces")

    def __init__(self, data: dict[str, Any], ordinal: int) -> None:
        self.data = data
        self.kind: str = data["type"]
        self.ordinal = ordinal
        self.pieces: list[str] = []

    def whole(self) -> dict[str, Any]:
        """The block as a whole message carries it (what a continuation sends back)."""
        data, joined = dict(self.data), join_surrogates("".join(self.pieces))
        kind = self.kind
        if kind == "text":
            data["text"] = joined
        elif kind == "thinking":
            data["thinking"] = joined
        elif "input" in data or joined:
            data["input"] = json.loads(joined) if joined.strip() else data.get("input") or {}
        return data


class MessagesStreamParser(StreamParser):
    """The events of one streamed message → chunks (one parser per attempt).

    Args:
        carry: what earlier messages of the same turn left (``pause_turn``); default none.
    """

    __slots__ = ("_blocks", "_carry", "_usage", "paused")

    def __init__(self, carry: Carry | None = None) -> None:
        super().__init__()
        self._carry = carry if carry is not None else Carry()
        self._blocks: dict[int, _Block] = {}
        self._usage: dict[str, Any] = {}
        self.paused: bool = False
        """The message ended with ``pause_turn``: the turn goes on in another request."""

    def parse(self, data: str, event: str | None) -> ChatChunk | None:
        try:
            obj = from_json(data)
        except ValueError:
            # Lone surrogate escapes ("\\ud83d") are valid JSON for the standard library's
            # parser, which keeps them: the read loop pairs them across chunks.
            chunk = self._event(lenient_json(data), data)
            return None if chunk is None else SurrogateChunk._make(chunk)
        return self._event(obj, data)

    def _event(self, obj: Any, data: str) -> ChatChunk | None:
        try:
            kind = obj["type"]
            if kind == "content_block_delta":
                # The per-token path: one text, thinking or argument piece.
                block = self._blocks[obj["index"]]
                delta = obj["delta"]
                delta_kind = delta["type"]
                if delta_kind == "text_delta":
                    text = delta["text"]
                    block.pieces.append(text)
                    if text and block.kind == "text":
                        return _new_chunk((text, None, (), None, None, None, (), None))
                    return None
                if delta_kind == "input_json_delta":
                    piece = delta["partial_json"]
                    block.pieces.append(piece)
                    if piece and block.kind == "tool_use":
                        call = (ToolCallDelta(block.ordinal, None, None, piece),)
                        return _new_chunk((None, None, call, None, None, None, (), None))
                    return None
                return self._other_delta(block, delta_kind, delta)
            if kind == "content_block_start":
                return self._start(obj["index"], obj["content_block"])
            if kind == "content_block_stop":
                return self._stop(self._blocks[obj["index"]])
            if kind == "message_delta":
                return self._message_delta(obj)
            if kind == "message_start":
                self._usage = dict(obj["message"].get("usage") or {})
                return None
            if kind == "message_stop":
                self.done = True
                return None
            if kind == "error":
                raise stream_error(obj.get("error") or obj, self._usage_so_far())
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            raise protocol_error("unexpected event shape", data) from exc
        return None  # ping, and event types added later

    def end(self, saw_finish_reason: bool) -> None:
        raise StreamInterruptedError("the message stream ended before message_stop")

    def continuation(self) -> Carry:
        """After :attr:`paused`: what the follow-up request starts from."""
        carry, old = Carry(), self._carry
        carry.content = old.content + [self._blocks[i].whole() for i in sorted(self._blocks)]
        carry.usage = self._usage_so_far()
        carry.tools, carry.thought = old.tools, old.thought
        return carry

    def _other_delta(self, block: _Block, kind: str, delta: dict[str, Any]) -> ChatChunk | None:
        if kind == "thinking_delta":
            thinking = delta["thinking"]
            if not thinking:
                return None
            if not block.pieces and self._carry.thought:
                block.pieces.append(thinking)
                thinking = "\n\n" + thinking  # a new block of thinking: a new paragraph
            else:
                block.pieces.append(thinking)
            self._carry.thought = True
            return _new_chunk((None, thinking, (), None, None, None, (), None))
        if kind == "signature_delta":
            block.data["signature"] = block.data.get("signature", "") + delta["signature"]
        elif kind == "citations_delta":
            block.data.setdefault("citations", []).append(delta["citation"])
        return None  # unknown delta types are the API's additions: nothing to show

    def _start(self, index: int, content_block: dict[str, Any]) -> ChatChunk | None:
        data = dict(content_block)
        kind = data["type"]
        ordinal = -1
        if kind == "tool_use":
            ordinal = self._carry.tools
            self._carry.tools += 1
        block = self._blocks[index] = _Block(data, ordinal)
        if kind == "tool_use":
            call_id, name = data["id"], data["name"]
            if type(call_id) is not str or type(name) is not str:
                raise TypeError("tool_use id or name is not a string")
            # ``input`` here is a placeholder ({}): the arguments come as deltas.
            call = (ToolCallDelta(ordinal, call_id, name, None),)
            return _new_chunk((None, None, call, None, None, None, (), None))
        if kind == "text":
            text = data.get("text") or ""
            if text:  # the API starts text blocks empty; a proxy may not
                block.pieces.append(text)
                return _new_chunk((text, None, (), None, None, None, (), None))
        elif kind == "thinking":
            thinking = data.get("thinking") or ""
            if thinking:
                return self._other_delta(block, "thinking_delta", {"thinking": thinking})
        return None

    def _stop(self, block: _Block) -> ChatChunk | None:
        kind = block.kind
        if kind == "thinking":
            item = {
                "type": "thinking",
                "thinking": join_surrogates("".join(block.pieces)),
                "signature": block.data.get("signature") or "",
            }
        elif kind == "redacted_thinking":
            item = {"type": "redacted_thinking", "data": block.data["data"]}
        elif kind == "tool_use" and not block.pieces and block.data.get("input"):
            # A compatible server that sends the input whole at the start, and no deltas.
            arguments = json.dumps(block.data["input"], ensure_ascii=False)
            block.pieces.append(arguments)
            call = (ToolCallDelta(block.ordinal, None, None, arguments),)
            return _new_chunk((None, None, call, None, None, None, (), None))
        else:
            return None
        replay = (ReplayItem(provider=PROVIDER, data=item),)
        return _new_chunk((None, None, (), None, None, None, replay, None))

    def _message_delta(self, obj: dict[str, Any]) -> ChatChunk | None:
        usage = obj.get("usage")
        if usage:
            self._usage.update(usage)
        stop = (obj.get("delta") or {}).get("stop_reason")
        if stop is None:
            return None
        if type(stop) is not str:
            raise TypeError("stop_reason is not a string")
        if stop == PAUSE_TURN:
            self.paused = True
            return None
        finish = FINISH_REASONS.get(stop, "stop")
        return _new_chunk((None, None, (), finish, self._usage_so_far(), None, (), stop))

    def _usage_so_far(self) -> Usage | None:
        usage = usage_of(self._usage) if self._usage else None
        prior = self._carry.usage
        if prior is None:
            return usage
        return prior + usage
