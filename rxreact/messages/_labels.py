"""Content made of parts (:class:`~rxreact.Text`, :class:`~rxreact.Image`, :class:`~rxreact.File`)
told in words.

Places that only show text (a trace, a terminal, a summary's transcript, a tool result's
event) label images and files instead of carrying their bytes.
"""

from __future__ import annotations

from collections.abc import Sequence

from rxreact.messages.parts import ContentPart, File, Image, Text

__all__ = ["MessageContent", "Question", "byte_size", "content_label", "part_label"]

MessageContent = str | tuple[ContentPart, ...]
"""A user message's or a tool message's content: a string, or parts."""


def part_label(part: ContentPart) -> str:
    """A part in words: its text, or ``[image: image/png, 1,234 bytes]``-style labels for
    an image or a file (never their bytes)."""
    if isinstance(part, Text):
        return part.text
    kind = "image" if isinstance(part, Image) else "file"
    name = f" {part.name}" if isinstance(part, File) and part.name else ""
    if part.url is not None:
        where = part.url if not part.url.startswith("data:") else part.url.split(",", 1)[0]
        return f"[{kind}{name}: {where}]"
    return f"[{kind}{name}: {part.media_type}, {byte_size(part):,} bytes]"


def byte_size(part: Image | File) -> int:
    """The size of a part's bytes, from their base64 without decoding it (0 for a URL part)."""
    encoded = part.data_base64 or ""
    return len(encoded) * 3 // 4 - encoded[-2:].count("=")


def content_label(content: MessageContent) -> str:
    """Content in words: the string, or its parts' labels joined by newlines."""
    if isinstance(content, str):
        return content
    return "\n".join(part_label(part) for part in content)


Question = str | Sequence[str | Text | Image | File]
"""What a run is asked: a ``str``, or text and parts (``["What is this?", Image.from_path(p)]``).
:func:`rxreact._validate.check_question` turns it into a :data:`MessageContent`."""
