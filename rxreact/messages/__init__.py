"""Chat messages, tool calls, usage and the model request: rxreact's own, provider-neutral models.

The history of a conversation is a tuple of :data:`Message`. Each wire format encodes them in
its own module (:mod:`rxreact.model.openai.request_codec`...); these models do not know any.

- :mod:`~rxreact.messages.chat`: the messages, :class:`Usage`, :class:`ToolCall`,
  :class:`ReplayItem`, :class:`ChatRequest`;
- :mod:`~rxreact.messages.parts`: what a message is made of when it is not only text:
  :class:`Text`, :class:`Image`, :class:`File`;
- private: ``_labels`` (parts told in words, for places that show only text).
"""

from rxreact.messages.chat import (
    AssistantMessage,
    ChatRequest,
    Message,
    ReplayItem,
    SystemMessage,
    ToolCall,
    ToolChoice,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from rxreact.messages.parts import MAX_PART_BYTES, ContentPart, File, Image, Text, content_text

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
