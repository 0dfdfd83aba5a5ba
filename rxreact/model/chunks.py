"""What a model stream carries: normalized chunks, and the response they assemble into.

:class:`ChatChunk` and :class:`ToolCallDelta` are ``NamedTuple`` s, not pydantic models:
one is built per streamed token, and a tuple costs a fraction of a validated model. They are
built only by trusted code (the wire parser, scripted models), so there is nothing to validate.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from pydantic import BaseModel, ConfigDict

from rxreact.messages import ReplayItem, ToolCall, Usage

__all__ = ["ChatChunk", "ModelResponse", "ToolCallDelta"]


class ToolCallDelta(NamedTuple):
    """A piece of one tool call, as streamed (OpenAI delta format, normalized)."""

    index: int | None = None  # type: ignore[assignment]  # the OpenAI field name, on purpose
    """The provider's raw index of the call in its response; ``None`` when it sent none."""
    id: str | None = None
    """The call id; usually only on the call's first delta; ``""`` is treated as absent."""
    name: str | None = None
    """The function name; usually only on the call's first delta."""
    arguments: str | None = None
    """The next piece of the JSON arguments string."""


class ChatChunk(NamedTuple):
    """One normalized ``chat.completion.chunk`` (choice 0 only).

    A chunk may carry several things at once (text and a finish reason, say). Empty strings
    are kept as sent; consumers decide what "meaningful" is.
    """

    text: str | None = None
    """Answer-text delta (``delta.content``, or the text parts of a content list)."""
    reasoning: str | None = None
    """Reasoning (``reasoning_content``, ``reasoning``, ``reasoning_details``, thinking parts)."""
    tool_calls: tuple[ToolCallDelta, ...] = ()
    """Tool-call deltas, in the order sent."""
    finish_reason: str | None = None
    """Set on the chunk that ends the choice."""
    usage: Usage | None = None
    """Token usage, usually on a trailing chunk with empty ``choices``."""
    role: str | None = None
    """``delta.role`` when sent (usually only on the first chunk)."""
    replay: tuple[ReplayItem, ...] = ()
    """Provider items to send back next request (a thinking block with its signature...),
    emitted whole once complete; the assembler keeps them in order."""
    provider_finish_reason: str | None = None
    """The provider's own stop reason when it differs from ``finish_reason`` (Anthropic's
    ``end_turn``, say, mapped to ``stop``)."""


class ModelResponse(BaseModel):
    """A whole model response: what a non-streaming call returns, and what a stream assembles to."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    content: str | None = None
    """The joined answer text; ``None`` when no non-empty text arrived."""
    reasoning: str | None = None
    """The joined reasoning text; ``None`` when none arrived."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Complete tool calls in call order, arguments as the raw joined string."""
    finish_reason: str | None = None
    """The last non-null finish reason."""
    usage: Usage | None = None
    """The last usage reported."""
    replay: tuple[ReplayItem, ...] = ()
    """Provider items to send back next request, in stream order."""
    provider_finish_reason: str | None = None
    """The provider's own stop reason, where it differs from ``finish_reason``."""
