"""Images and files a client sends, as the agent's parts: one reading for every protocol.

Each protocol names its parts its own way (the AI SDK's ``file`` part with a data URL, OpenAI's
``image_url`` and ``file``, AG-UI's ``image`` / ``document`` with a data or URL source, A2A's
``raw`` or ``url`` part); they all end here as :class:`~rxreact.Image` (a media type
``image/*``) or :class:`~rxreact.File` (anything else), so the agent's model adapter sends them
on as its API takes them. What cannot be carried is a ``400 unsupported_part`` naming the part:

===================================  ==========================================================
sent                                 becomes
===================================  ==========================================================
``data:<type>;base64,<bytes>``       the bytes (checked to be base64, at most
                                     :data:`~rxreact.messages.parts.MAX_PART_BYTES`)
``data:<type>,<percent-encoded>``    the same bytes, base64-encoded
``https://...`` / ``http://...``     the URL, for the provider to fetch
another scheme (``file:``, ``blob:``) refused: the server cannot read the client's files
===================================  ==========================================================
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from urllib.parse import unquote_to_bytes

from rxreact.messages import MAX_PART_BYTES, File, Image
from rxreact.messages._labels import Question
from rxreact.serve._body import HTTPProblem, UIPart

__all__ = [
    "as_image",
    "inline_part",
    "media_part",
    "question_of",
    "text_chars",
    "ui_question",
    "unsupported",
]

MediaPart = Image | File
_URL_SCHEMES = ("https://", "http://")


def unsupported(detail: str) -> HTTPProblem:
    """The answer to a part the server cannot hand to the agent."""
    return HTTPProblem(400, "unsupported_part", detail)


def media_part(url: str, media_type: str | None = None, name: str | None = None) -> MediaPart:
    """The part a URL names: a ``data:`` URL's bytes, or an ``http(s)`` URL kept as a link.

    ``media_type`` is the client's word for it (a data URL's own type wins when the client
    gave none); an image is a media type ``image/*``, or an untyped ``http(s)`` URL where the
    caller knows it is an image (pass ``image/*``).

    Raises:
        HTTPProblem: 400 for a URL of another scheme, a malformed data URL, too many bytes.
    """
    if url.startswith("data:"):
        declared, data = _data_url(url)
        return inline_part(data, media_type or declared, name)
    if not url.lower().startswith(_URL_SCHEMES):
        shown = url.partition(":")[0][:20] + ":" if ":" in url else url[:40]
        raise unsupported(
            f"a part's URL must be data:, https: or http:, not {shown!r} (send the bytes as a "
            "data: URL)"
        )
    if media_type is not None and media_type.lower().startswith("image/"):
        return Image(url=url, media_type=media_type)
    return File(url=url, media_type=media_type, name=name)


def as_image(part: MediaPart) -> Image:
    """``part`` as an image (a protocol's image part is one whatever its data URL says)."""
    if isinstance(part, Image):
        return part
    if part.url is not None:
        return Image(url=part.url)
    return Image(data_base64=part.data_base64, media_type=part.media_type)


def inline_part(data_base64: str, media_type: str | None, name: str | None = None) -> MediaPart:
    """A part from base64 bytes and their media type (required: nothing else tells it).

    Raises:
        HTTPProblem: 400 for bytes that are not base64, too many of them, or no media type.
    """
    if not media_type:
        raise unsupported("an inline image or file needs its media type")
    compact = "".join(data_base64.split())
    try:
        size = len(base64.b64decode(compact, validate=True))
    except (binascii.Error, ValueError):
        raise unsupported(f"the bytes of a {media_type} part are not valid base64") from None
    if size > MAX_PART_BYTES:
        raise unsupported(
            f"a {media_type} part of {size:,} bytes is over the {MAX_PART_BYTES:,} carried inline"
        )
    if media_type.lower().startswith("image/"):
        return Image(data_base64=compact, media_type=media_type)
    return File(data_base64=compact, media_type=media_type, name=name)


def _data_url(url: str) -> tuple[str | None, str]:
    """``(media type or None, base64 data)`` of a ``data:`` URL (RFC 2397)."""
    head, comma, data = url[5:].partition(",")
    if not comma:
        raise unsupported("a data: URL needs a comma before its data")
    fields = head.split(";")
    media_type = fields[0].strip() or None
    if "base64" in (f.strip().lower() for f in fields[1:]):
        return media_type, data
    return media_type, base64.b64encode(unquote_to_bytes(data)).decode("ascii")


def question_of(parts: Sequence[str | MediaPart]) -> Question:
    """The run's question: the text alone when nothing else was sent (as before parts), else
    the parts in order (an image alone is a question).

    Raises:
        HTTPProblem: 422 when there is neither text nor any image or file.
    """
    if all(isinstance(p, str) for p in parts):
        text = "".join(p for p in parts if isinstance(p, str))
        if not text.strip():
            raise HTTPProblem(
                422, "invalid_body", "the last message must be a user message with text or files"
            )
        return text
    return [p for p in parts if not isinstance(p, str) or p]


def text_chars(question: Question) -> int:
    """The characters of the question's text (what ``max_message_chars`` limits)."""
    if isinstance(question, str):
        return len(question)
    return sum(len(p) if isinstance(p, str) else len(getattr(p, "text", "")) for p in question)


_UI_IGNORED = ("step-start", "reasoning", "source-url", "source-document")


def ui_question(role: str, parts: Sequence[UIPart]) -> Question:
    """The question of ``POST /api/chat``'s last ``UIMessage``: its ``text`` parts, and its
    ``file`` parts (``{type: "file", mediaType, filename, url}``, the url a data URL as
    ``useChat``'s ``sendMessage({files})`` makes it) as images and files. ``data-*`` parts are
    the app's own state, not the model's input, and are not read.

    Raises:
        HTTPProblem: 422 unless the message is the user's with some text or file; 400 for a
            part of another type or a file that cannot be carried.
    """
    if role != "user":
        raise HTTPProblem(422, "invalid_body", "the last message must be a user message")
    read: list[str | MediaPart] = []
    for index, part in enumerate(parts):
        if part.type == "text":
            read.append(part.text or "")
        elif part.type == "file":
            if not part.url:
                raise unsupported(f"parts[{index}]: a file part needs its url")
            read.append(media_part(part.url, part.mediaType, part.filename))
        elif not part.type.startswith("data-") and part.type not in _UI_IGNORED:
            raise unsupported(
                f"parts[{index}]: a {part.type[:40]!r} part cannot be sent to the agent "
                "(it takes text and file parts)"
            )
    return question_of(read)
