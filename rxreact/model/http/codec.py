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

from typing import ClassVar

from rxreact.errors import StreamInterruptedError
from rxreact.model.chunks import ChatChunk

__all__ = ["StreamParser"]


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
