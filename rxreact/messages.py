"""Chat messages, tool calls, usage and the model request: rxreact's own, provider-neutral models.

The history of a conversation is a tuple of :data:`Message`. The wire encoding for an
OpenAI-compatible endpoint lives in :mod:`rxreact.model.openai.client`; these models do not know it.
"""

from __future__ import annotations

import base64
import mimetypes
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rxreact.errors import InvalidArgumentError

__all__ = [
    "MAX_PART_BYTES",
    "AssistantMessage",
    "ChatRequest",
    "ContentPart",
    "File",
    "Image",
    "Message",
    "ReplayItem",
    "SystemMessage",
    "Text",
    "ToolCall",
    "ToolChoice",
    "ToolMessage",
    "ToolSpec",
    "Usage",
    "UserMessage",
    "content_text",
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


MAX_PART_BYTES = 20 * 1024 * 1024
"""The largest image or file carried inline (20 MiB of bytes before base64): larger ones are
refused when the part is made, with :class:`~rxreact.errors.InvalidArgumentError`. Each model
adapter may refuse smaller ones its API does not take (Anthropic: 5 MB per image)."""


class Text(_Model):
    """A piece of text in a message made of parts."""

    type: Literal["text"] = "text"
    text: str


class _Media(_Model):
    """An image or a file: a URL, or bytes kept as base64 (JSON-safe, as every API wants them)."""

    url: str | None = None
    """Where the provider fetches it (``https://...``, or a ``data:`` URL)."""
    data_base64: str | None = None
    """The bytes, base64-encoded; use :attr:`data` for the bytes themselves."""
    media_type: str | None = None
    """``image/png``, ``application/pdf``...; required with bytes."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.url is None) == (self.data_base64 is None):
            raise ValueError(f"{type(self).__name__} needs exactly one of url or data")
        if self.data_base64 is not None and not self.media_type:
            raise ValueError(f"{type(self).__name__} with data needs a media_type")
        return self

    @property
    def data(self) -> bytes | None:
        """The bytes (decoded from :attr:`data_base64`), ``None`` for a URL part."""
        return None if self.data_base64 is None else base64.b64decode(self.data_base64)

    @classmethod
    def _encoded(cls, data: bytes, what: str) -> str:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise InvalidArgumentError(f"{what} must be bytes, got {type(data).__name__}")
        if len(data) > MAX_PART_BYTES:
            raise InvalidArgumentError(
                f"{what} is {len(data):,} bytes; the most rxreact carries inline is "
                f"{MAX_PART_BYTES:,} (MAX_PART_BYTES): pass a URL instead"
            )
        return base64.b64encode(bytes(data)).decode("ascii")

    @classmethod
    def _read(cls, path: str | Path) -> tuple[bytes, str | None, str]:
        file = Path(path)
        try:
            size = file.stat().st_size
            if size > MAX_PART_BYTES:
                raise InvalidArgumentError(
                    f"{file} is {size:,} bytes; the most rxreact carries inline is "
                    f"{MAX_PART_BYTES:,} (MAX_PART_BYTES): pass a URL instead"
                )
            data = file.read_bytes()
        except OSError as exc:
            raise InvalidArgumentError(f"cannot read {file}: {exc.strerror or exc}") from exc
        return data, mimetypes.guess_type(file.name)[0], file.name


class Image(_Media):
    """An image in a user message or a tool result: ``Image.from_path("cat.png")``."""

    type: Literal["image"] = "image"

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str) -> Image:
        """An image from its bytes (``media_type``: ``image/png``, ``image/jpeg``...)."""
        return cls(data_base64=cls._encoded(data, "image data"), media_type=media_type)

    @classmethod
    def from_url(cls, url: str) -> Image:
        """An image the provider fetches itself."""
        return cls(url=url)

    @classmethod
    def from_path(cls, path: str | Path) -> Image:
        """An image read from a file; the media type is guessed from its name."""
        data, media_type, name = cls._read(path)
        if media_type is None or not media_type.startswith("image/"):
            raise InvalidArgumentError(f"{name} does not look like an image ({media_type})")
        return cls.from_bytes(data, media_type)


class File(_Media):
    """A document (a PDF, a text file...) in a user message: ``File.from_path("report.pdf")``."""

    type: Literal["file"] = "file"
    name: str | None = None
    """The file name shown to the model, where the API takes one."""

    @classmethod
    def from_bytes(cls, data: bytes, media_type: str, name: str | None = None) -> File:
        """A file from its bytes."""
        return cls(data_base64=cls._encoded(data, "file data"), media_type=media_type, name=name)

    @classmethod
    def from_url(cls, url: str, name: str | None = None) -> File:
        """A file the provider fetches itself."""
        return cls(url=url, name=name)

    @classmethod
    def from_path(cls, path: str | Path) -> File:
        """A file read from disk; the media type is guessed from its name (else octet-stream)."""
        data, media_type, name = cls._read(path)
        return cls.from_bytes(data, media_type or "application/octet-stream", name)


ContentPart = Annotated[Text | Image | File, Field(discriminator="type")]
"""One part of a message made of parts."""


def content_text(content: str | tuple[ContentPart, ...]) -> str:
    """The text of a message's content: the string, or its text parts joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(part.text for part in content if isinstance(part, Text))


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
