"""An A2A message's parts as the agent's question (:mod:`rxreact.serve._media` reads the media)."""

from __future__ import annotations

import base64
import json

from a2a.types.a2a_pb2 import Message
from google.protobuf.json_format import MessageToDict

from rxreact.messages import File, Image
from rxreact.messages._labels import Question
from rxreact.serve._media import inline_part, media_part, question_of

__all__ = ["question"]


def question(message: Message) -> Question:
    """The message's parts as the question: text parts (joined by newlines, as one text),
    ``raw`` bytes and ``url`` parts as images (``mediaType`` ``image/*``) and files, ``data``
    parts as their JSON text.

    Raises:
        HTTPProblem: 400 for a part that cannot be carried, 422 for a message with nothing.
    """
    read: list[str | Image | File] = []
    for part in message.parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            read.append(
                part.text if not read or not isinstance(read[-1], str) else "\n" + part.text
            )
        elif kind == "raw":
            encoded = base64.b64encode(part.raw).decode("ascii")
            read.append(inline_part(encoded, part.media_type, part.filename or None))
        elif kind == "url":
            read.append(media_part(part.url, part.media_type or None, part.filename or None))
        elif kind == "data":
            read.append(json.dumps(MessageToDict(part.data), ensure_ascii=False))
    return question_of(read)
