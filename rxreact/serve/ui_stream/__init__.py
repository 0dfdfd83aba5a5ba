"""Agent events as the Vercel AI SDK UI message stream (protocol v1), the wire format of
``useChat`` and of the ``ai`` package's ``readUIMessageStream``.

A run's events map onto stream parts one to one or one to a few; the mapping keeps the open
text / reasoning part and the round's tool calls, so it is a function of the whole event
sequence from ``seq`` 1. A resumed stream replays the run from its first event through the same
mapping and only *sends* the parts of events after ``Last-Event-ID``: the part ids the client
already holds stay valid.

::

    round_started(1)            start, start-step
    reasoning_delta             reasoning-start (first), reasoning-delta
    text_delta                  [reasoning-end], text-start (first), text-delta
    tool_call_started           [text-end], tool-input-start
    tool_call_args_delta        tool-input-delta
    round_finished              [text-end], tool-input-available per call (arguments parsed)
    tool_approval_requested     tool-approval-request (approvalId = the call id)
    tool_progress               tool-output-available with preliminary: true
    tool_execution_started      data-approval (approved) when the call waited for approval
    tool_result                 [data-approval (denied)], tool-output-available, or
                                tool-output-error when is_error
    round_restarted             [text-end], data-round-restarted (the ids to withdraw)
    guardrail_tripped           [text-end], data-guardrail-tripped (the ids to withdraw)
    output_partial              data-output {round, output} (id output-<round>: each one
                                replaces the last; the chat page draws it as a live card)
    output_reset                data-output {round, output: null, reset} (same id)
    round_started(n > 1)        finish-step, start-step
    final_answer                [text-end], [data-output {round, output, final: true}],
                                finish-step, finish
    events of agents run as     the calling tool's preliminary output; their approval
    tools (path != ())          requests as cards of their own (ui_stream/_nested_parts.py)
    on_error                    [text-end], finish-step, error, finish(error)  -- or abort
                                when the run was cancelled; the part stream then completes

Each part travels as one SSE event ``id: <seq>`` / ``data: <json>``; the stream ends with
``data: [DONE]``. The parts of one agent event share its ``seq`` and are written together.
The mapping's state machine is :class:`rxreact.serve.ui_stream._parts.UIPartMapper`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable

from rxreact.serve._mapping import mapped_events
from rxreact.serve._sse import DONE as DONE
from rxreact.serve._sse import UIChunk as UIChunk
from rxreact.serve.ui_stream._parts import Part as Part  # importable from here, as it was
from rxreact.serve.ui_stream._parts import UIPartMapper
from rxreact.serve.ui_stream._parts import error_text as error_text

__all__ = ["DONE", "UI_MESSAGE_STREAM_HEADERS", "UIChunk", "to_ui_message_stream"]

UI_MESSAGE_STREAM_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The response headers of a UI message stream (as the AI SDK sends them)."""


def to_ui_message_stream(
    message_id: str | None = None, *, after: int = 0
) -> Callable[[Observable[Any]], Observable[UIChunk]]:
    """Map a run's events (from its first, ``seq`` 1) to UI message stream parts.

    ::

        events:  -R1--T--T--F|                  R: round_started, T: text_delta,
                                                F: final_answer
        result:  -(s,ss)--(ts,td)--td--(te,fs,f)|
                                                s: start, ss: start-step, ts: text-start,
                                                td: text-delta, te: text-end,
                                                fs: finish-step, f: finish

        events:  -R1--T--#                      the run failed
        result:  -(s,ss)--(ts,td)--(te,fs,e,f)| e: error, f: finish(error); no error out

    The result never errors for the run's error: it becomes parts and the stream completes
    (a browser gets a readable ending, not a dropped connection). A failure of the mapping
    itself still goes to ``on_error``.

    Args:
        message_id: sent as the ``start`` part's ``messageId`` (the server uses the run id).
        after: parts of events with ``seq <= after`` update the state but are not emitted:
            the ``Last-Event-ID`` of a resumed stream.

    Returns:
        An operator ``Observable[AgentEvent] -> Observable[UIChunk]``.
    """

    return mapped_events(lambda: _Chunks(message_id, after))


class _Chunks:
    """One subscription's parts as :class:`UIChunk` s, numbered by ``seq``; those of events
    up to ``after`` update the state but are held back."""

    __slots__ = ("_after", "_count", "_parts")

    def __init__(self, message_id: str | None, after: int) -> None:
        self._parts = UIPartMapper(message_id)
        self._after = after
        self._count = 0

    def opening(self) -> list[UIChunk]:
        return []

    def feed(self, event: Any) -> list[UIChunk]:
        self._count += 1
        # seq is the event's 1-based position in its run; counting gives the same number for
        # events that carry none.
        seq = getattr(event, "seq", None) or self._count
        parts = self._parts.feed(event)
        return [UIChunk(seq, part) for part in parts] if seq > self._after else []

    def fail(self, error: Exception) -> list[UIChunk]:
        return [UIChunk(None, part) for part in self._parts.fail(error)]
