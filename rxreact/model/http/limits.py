"""Size caps on what a model may send, with their defaults.

A provider (or anything between it and us) can send without end: one SSE line of 100 MiB,
tool-call arguments of 100 MiB spread over a million deltas. Without caps such a response
costs the client gigabytes, is stored in the chat memory and sent back on every later request.
The caps end it early with :class:`~rxreact.errors.ResponseTooLargeError`, closing the stream:

=========================  ==============  =====================================================
cap                        default         what it bounds
=========================  ==============  =====================================================
``max_line_bytes``         8 MiB           one line of the SSE body (one event's data line)
``max_tool_arguments``     1 Mi chars      the tool-call arguments of one response, all calls
=========================  ==============  =====================================================

Both are :class:`~rxreact.model.openai.OpenAIChatModel` arguments; ``None`` lifts a cap. Tool
*results* have their own cap, per tool (``@tool(max_result_chars=...)``, see
:mod:`rxreact.tools.results`): a result is cut with a visible marker, not an error.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DEFAULT_MAX_LINE_BYTES", "DEFAULT_MAX_TOOL_ARGUMENTS", "StreamLimits"]

DEFAULT_MAX_LINE_BYTES = 8 << 20
"""The longest SSE line accepted, in bytes (a whole 1 Mi-character tool call, escaped, fits)."""
DEFAULT_MAX_TOOL_ARGUMENTS = 1 << 20
"""The most tool-call argument characters accepted in one response."""


class StreamLimits(NamedTuple):
    """The caps a stream is read under; ``None`` = no cap."""

    max_line_bytes: int | None = DEFAULT_MAX_LINE_BYTES
    """The longest SSE line, in bytes."""
    max_tool_arguments: int | None = DEFAULT_MAX_TOOL_ARGUMENTS
    """The most tool-call argument characters in one response."""
