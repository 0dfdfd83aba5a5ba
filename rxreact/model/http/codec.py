"""What a wire format gives the transport: a stream parser per response.

The transport (:mod:`rxreact.model.http`) reads SSE events; a wire format turns the data of
each event into :class:`~rxreact.model.chunks.ChatChunk` s and says when the response is over.
Chat completions is stateless per event and ends with ``data: [DONE]`` (or the end of the body
after a finish reason); Anthropic's Messages and OpenAI's Responses streams are stateful
(content blocks or output items are opened, filled and closed by index) and end with a typed
terminal event (``message_stop``, ``response.completed``), without which the response is
incomplete, however much text arrived.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from rxreact.errors import StreamInterruptedError
from rxreact.model.chunks import ChatChunk
from rxreact.model.http.sse import SSEDecoder, SSEEvent

__all__ = ["FrameDecoder", "StreamParser"]


class FrameDecoder(Protocol):
    """Bytes in, whole events out: how a response body is framed (SSE, AWS's event stream)."""

    def feed(self, data: bytes) -> list[SSEEvent]:
        """The events the next piece of the body completes, in order."""
        ...

    def close(self) -> list[SSEEvent]:
        """The end of the body: the events still pending."""
        ...


class StreamParser:
    """Turns the events of ONE streamed response into chunks (one parser per attempt).

    Subclasses implement :meth:`parse` and set :attr:`done` on their terminal event. The read
    loop checks, per event: ``data == terminal_data`` (the cheap end marker of chat
    completions), then ``parse``, then ``done``.
    """

    __slots__ = ("done",)

    terminal_data: ClassVar[str | None] = None
    """Event data that ends the stream without being parsed (``[DONE]``), if the format has it."""

    def __init__(self) -> None:
        self.done: bool = False
        """Set once the terminal event was parsed: the read loop stops reading."""

    def new_decoder(self, max_bytes: int | None) -> FrameDecoder:
        """The framing of this format's responses: SSE (the default), or another decoder with
        the same two methods (Bedrock's binary event stream). ``max_bytes``: the longest line
        or frame accepted."""
        return SSEDecoder(max_bytes)

    def parse(self, data: str, event: str | None) -> ChatChunk | None:
        """The chunk one event carries (``None``: nothing to emit).

        Raises:
            ProviderStreamError: the event is the provider's error.
            StreamProtocolError: the data is not what the format allows.
        """
        raise NotImplementedError

    def end(self, saw_finish_reason: bool) -> None:
        """The body ended before :attr:`done`: raise unless that is a complete response.

        Raises:
            StreamInterruptedError: the response was cut (the default: no terminal event).
        """
        raise StreamInterruptedError(
            f"the stream ended before its terminal event ({type(self).__name__})"
        )
