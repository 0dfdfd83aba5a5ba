"""The chat messages, tool calls, usage and the model request."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from rxreact.messages.parts import ContentPart, content_text

__all__ = [
    "AssistantMessage",
    "ChatRequest",
    "Message",
    "ReplayItem",
    "SystemMessage",
    "ToolCall",
    "ToolChoice",
    "ToolMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
]


class _Model(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")


class Usage(BaseModel):
    """Token counts of one model response, or summed over a run.

    ``None`` where the provider sent nothing. Provider-specific extras (``prompt_tokens_details``,
    ``cost``...) are kept as extra fields because they are the provider's data, not ours.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="allow")

    prompt_tokens: int | None = None
    """Tokens in the request."""
    completion_tokens: int | None = None
    """Tokens the model generated."""
    total_tokens: int | None = None
    """Their sum, as the provider reports it."""
    cost: float | None = None
    """What the request cost in USD (:mod:`rxreact.costs.prices`), as the provider reported it
    or priced by model; ``None`` when no price is known (never 0 for "unknown"). A sum has a
    cost only when every part had one."""

    def __add__(self, other: Usage | None) -> Usage:
        """Sum two usages (a run's rounds): every count adds up, the provider's extras too.

        A count stays ``None`` only when both sides are ``None``. Extras merge key by key:
        numbers add up (``cost``), nested objects merge the same way
        (``prompt_tokens_details.cached_tokens``), a key on one side only is kept, and where
        the two sides hold different non-numbers (a string, a flag) the left one's is kept.
        """
        if other is None:
            return self

        counts = {}
        for name in ("prompt_tokens", "completion_tokens", "total_tokens"):
            a, b = getattr(self, name), getattr(other, name)
            if a is not None or b is not None:  # unset stays unset: no null the provider never sent
                counts[name] = (a or 0) + (b or 0)
        if self.cost is not None and other.cost is not None:
            counts["cost"] = self.cost + other.cost
        return Usage(
            **counts,
            **_merge_extras(self.__pydantic_extra__ or {}, other.__pydantic_extra__ or {}),
        )


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _merge_extras(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    merged = dict(right)
    for key, a in left.items():
        b = right.get(key)
        if _is_number(a) and _is_number(b):
            merged[key] = a + b
        elif isinstance(a, dict) and isinstance(b, dict):
            merged[key] = _merge_extras(a, b)
        elif a is not None or key not in right:
            merged[key] = a
    return merged


class ToolCall(_Model):
    """One complete tool call requested by the model."""

    id: str
    """The provider's call id (or a stable synthesized one when the provider sent none)."""
    name: str
    """The tool's name as the model wrote it (it may name no known tool)."""
    arguments: str
    """The raw JSON arguments string, exactly as assembled from the stream."""


class ReplayItem(_Model):
    """An opaque item a provider needs back, unchanged, on the next request of the conversation:
    Anthropic's thinking blocks with their signature, the Responses API's reasoning items.

    Tagged with the wire format that made it (``"anthropic"``, ``"openai-responses"``): an
    encoder sends back only its own, so a conversation continued on another model drops them.
    Never shown in events or text.
    """

    provider: str
    data: dict[str, Any]


class SystemMessage(_Model):
    """Instructions for the model."""

    role: Literal["system"] = "system"
    content: str


class UserMessage(_Model):
    """What the user said."""

    role: Literal["user"] = "user"
    content: str | tuple[ContentPart, ...]
    """A string, or parts: :class:`Text`, :class:`Image`, :class:`File`."""

    @property
    def text(self) -> str:
        """The message's text (its text parts joined by newlines)."""
        return content_text(self.content)


class AssistantMessage(_Model):
    """What the model said in one round: text, tool calls, or both."""

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    """The answer text, or the text written before the tool calls; ``None`` when there was none."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The tool calls of the round, in call order."""
    reasoning: str | None = None
    """The model's reasoning text; sent back only when the model is configured to."""
    replay: tuple[ReplayItem, ...] = ()
    """Provider items to send back unchanged (thinking signatures, encrypted reasoning)."""


class ToolMessage(_Model):
    """The result of one tool call, answering the assistant's call with the same id."""

    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: str | tuple[ContentPart, ...]
    """The result: a string, or parts (a tool that returned an image)."""
    name: str | None = None
    """The tool's name; informational, not sent by every encoder."""
    is_error: bool = False
    """The tool failed and the content says how (Anthropic's ``tool_result`` sends it)."""


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage,
    Field(discriminator="role"),
]
"""Any chat message, discriminated on ``role``."""


class ToolSpec(_Model):
    """A tool as declared to the model."""

    name: str
    description: str
    parameters: dict[str, Any]
    """JSON schema of the arguments object."""


ToolChoice = Literal["auto", "none", "required"]


class ChatRequest(_Model):
    """One request to a chat model."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    """``None`` leaves it to the provider; ``"none"`` keeps the tools declared but forbids calls."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Extra body parameters passed through as-is (``temperature``, ``max_tokens``...)."""
