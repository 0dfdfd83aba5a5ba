"""Images in tool results for APIs whose tool messages take only text.

Chat completions accepts text alone in a ``tool`` message, and images only from the user. A
tool result holding images (or files) is therefore sent in two pieces: the tool message
carries its text and says what follows, and one user message after the round's tool messages
carries the images, each introduced by the call it answers::

    assistant  calls a, b
    tool a     ("chart:", Image)          ->  tool a  "chart:\n[image attached below]"
    tool b     "sunny"                    ->  tool b  "sunny"
                                          ->  user    ("Tool a (call a) returned:", Image)
    user       "next question"            ->  user    "next question"

APIs that take images in a tool result (Anthropic, the Responses API) send them there and do
not need this.
"""

from __future__ import annotations

from collections.abc import Sequence

from rxreact.messages import ContentPart, File, Image, Message, Text, ToolMessage, UserMessage

__all__ = ["ATTACHED_BELOW", "tool_media_to_user_messages"]

ATTACHED_BELOW = "[{kind} attached below]"
"""What a tool message says in place of each image or file that follows in a user message."""


def tool_media_to_user_messages(messages: Sequence[Message]) -> Sequence[Message]:
    """``messages`` with every tool result's images and files moved to one user message after
    the tool messages of its round (the diagram in the module docstring).

    Returns ``messages`` itself when no tool message holds an image or a file: the common
    request costs one scan.
    """
    if not any(_has_media(m) for m in messages):
        return messages
    out: list[Message] = []
    follow_up: list[ContentPart] = []
    for message in messages:
        if not isinstance(message, ToolMessage) and follow_up:
            out.append(UserMessage(content=tuple(follow_up)))
            follow_up = []
        if isinstance(message, ToolMessage) and not isinstance(message.content, str):
            text, media = _split(message.content)
            out.append(message.model_copy(update={"content": text}))
            if media:
                name = message.name or "the tool"
                follow_up.append(Text(text=f"Tool {name} (call {message.tool_call_id}) returned:"))
                follow_up.extend(media)
        else:
            out.append(message)
    if follow_up:
        out.append(UserMessage(content=tuple(follow_up)))
    return out


def _has_media(message: Message) -> bool:
    return isinstance(message, ToolMessage) and not isinstance(message.content, str)


def _split(parts: tuple[ContentPart, ...]) -> tuple[str, list[Image | File]]:
    """A tool result's text (each image or file marked where it was) and its media."""
    lines: list[str] = []
    media: list[Image | File] = []
    for part in parts:
        if isinstance(part, Text):
            lines.append(part.text)
        else:
            media.append(part)
            lines.append(ATTACHED_BELOW.format(kind="image" if isinstance(part, Image) else "file"))
    return "\n".join(lines), media
