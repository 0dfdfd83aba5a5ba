"""Agent events as OpenAI chat-completion chunks: the agent speaks to any OpenAI client as a model.

::

    any event (the first)       delta {"role": "assistant", "content": ""}
    reasoning_delta             delta {"reasoning_content": <delta>}
    text_delta                  delta {"content": <delta>}          (the answer)
    round_finished (tool_call)  delta {"reasoning_content": "→ name({args})\\n"} per call
    tool_approval_requested     delta {"reasoning_content": "… waits for approval of name\\n"}
    tool_result                 delta {"reasoning_content": "← name: <content>\\n"}
    final_answer                delta {}, finish_reason "stop" ("length" for a forced answer);
                                then, with include_usage, a chunk with "usage" and no choices
    on_error                    {"error": {"message", "type", "code"}}; the chunks complete

Tool activity travels as ``reasoning_content`` (the field DeepSeek and others use for a model's
thinking), so chat UIs fold it away and show the answer. Text a round writes before it turns
out to call a tool is already sent as ``content`` when the call comes (the stream cannot take
it back); :func:`chat_completion` builds a non-streamed answer from the final answer alone.

No Starlette here: :func:`to_chat_completion_chunks` is an Rx operator usable on any run's
events; the endpoint is :func:`rxreact.serve.openai_compat._routes.openai_routes`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reactivex import Observable

from rxreact.errors import ConversationBusyError, RunCancelledError, TooManyRunsError
from rxreact.events import (
    FinalAnswer,
    ReasoningDelta,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ToolApprovalRequested,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolResult,
)
from rxreact.serve._client_errors import error_text
from rxreact.serve._mapping import mapped_events

__all__ = ["chat_completion", "error_body", "to_chat_completion_chunks"]

Chunk = dict[str, Any]

MAX_TOOL_TEXT = 2000
"""Characters of a tool's arguments or result shown in ``reasoning_content`` (the rest: …)."""


@dataclass
class _Mapper:
    completion_id: str
    model: str
    created: int
    include_usage: bool
    started: bool = False
    calls: dict[int, list[str]] = field(default_factory=dict)  # index -> [name, arguments]

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> Chunk:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return {**self._head(), "choices": [choice]}

    def _head(self) -> Chunk:
        return {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
        }

    def opening(self) -> list[Chunk]:
        return []

    def fail(self, error: Exception) -> list[Chunk]:
        """A failed run's last chunk: its OpenAI-style error object."""
        return [error_body(error)[1]]

    def feed(self, event: Any) -> list[Chunk]:
        out: list[Chunk] = []
        if not self.started:
            self.started = True
            out.append(self.chunk({"role": "assistant", "content": ""}))
        if isinstance(event, TextDelta):
            out.append(self.chunk({"content": event.delta}))
        elif isinstance(event, ReasoningDelta):
            out.append(self.chunk({"reasoning_content": event.delta}))
        elif isinstance(event, RoundStarted):
            self.calls = {}
        elif isinstance(event, ToolCallStarted):
            self.calls[event.index] = [event.name, ""]
        elif isinstance(event, ToolCallArgsDelta):
            self.calls[event.index][1] += event.delta
        elif isinstance(event, RoundFinished) and self.calls:
            lines = "".join(f"→ {n}({_short(a)})\n" for n, a in self.calls.values())
            out.append(self.chunk({"reasoning_content": lines}))
        elif isinstance(event, ToolApprovalRequested):
            out.append(self.chunk({"reasoning_content": f"… waits for approval of {event.name}\n"}))
        elif isinstance(event, ToolResult):
            mark = "✗" if event.is_error else "←"
            text = f"{mark} {event.name}: {_short(event.content)}\n"
            out.append(self.chunk({"reasoning_content": text}))
        elif isinstance(event, FinalAnswer):
            out.append(self.chunk({}, "length" if event.forced else "stop"))
            if self.include_usage:
                out.append({**self._head(), "choices": [], "usage": usage_of(event)})
        return out


def _short(text: str) -> str:
    return text if len(text) <= MAX_TOOL_TEXT else text[:MAX_TOOL_TEXT] + "…"


def usage_of(final: FinalAnswer) -> dict[str, float]:
    """The run's usage as the API reports it (zeros where the model reported nothing), with
    its ``cost`` in USD when known (as OpenRouter reports it)."""
    usage = final.usage
    prompt = (usage.prompt_tokens if usage else None) or 0
    completion = (usage.completion_tokens if usage else None) or 0
    total = (usage.total_tokens if usage else None) or prompt + completion
    out: dict[str, float] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": total,
    }
    if usage is not None and usage.cost is not None:
        out["cost"] = usage.cost
    return out


def error_body(error: BaseException) -> tuple[int, dict[str, Any]]:
    """The HTTP status and OpenAI-style error object of a run that failed."""
    if isinstance(error, ConversationBusyError):
        status, kind, code = 409, "conflict_error", "conversation_busy"
    elif isinstance(error, TooManyRunsError):
        status, kind, code = 429, "rate_limit_error", "too_many_runs"
    elif isinstance(error, RunCancelledError):
        status, kind, code = 499, "cancelled", "run_cancelled"
    else:
        status, kind, code = 502, "agent_error", type(error).__name__
    message = error_text(error)
    return status, {"error": {"message": message, "type": kind, "param": None, "code": code}}


def to_chat_completion_chunks(
    completion_id: str, model: str, *, include_usage: bool = False, created: int | None = None
) -> Callable[[Observable[Any]], Observable[Chunk]]:
    """Map a run's events to ``chat.completion.chunk`` objects (the JSON of each SSE event).

    ::

        events:  -R1--T--T--F|              R: round_started, T: text_delta, F: final_answer
        result:  -r--c--c--s|               r: role chunk, c: content delta, s: finish "stop"
                                            (then a usage chunk with include_usage)

        events:  -R1--#                     the run failed
        result:  -r--e|                     e: {"error": {...}}; no error out

    Args:
        completion_id: every chunk's ``id`` (the server uses ``chatcmpl-<run id>``).
        model: every chunk's ``model``.
        include_usage: end with a chunk carrying ``usage`` (``stream_options.include_usage``).
        created: the chunks' ``created`` (default: now, in Unix seconds).

    Returns:
        An operator ``Observable[AgentEvent] -> Observable[dict]``.
    """

    def make() -> _Mapper:
        stamp = int(time.time()) if created is None else created  # at each subscription
        return _Mapper(completion_id, model, stamp, include_usage)

    return mapped_events(make)


def chat_completion(chunks: Sequence[Chunk], answer: FinalAnswer | None = None) -> Chunk:
    """The non-streamed ``chat.completion`` the chunks add up to.

    ``content`` is the final answer's text when ``answer`` is given (text a tool round wrote
    stays out), else the streamed content; ``reasoning_content`` is every reasoning delta.
    """
    content: list[str] = []
    reasoning: list[str] = []
    finish_reason: str | None = None
    usage: dict[str, float] | None = None
    head: Chunk = {}
    for chunk in chunks:
        head = head or chunk
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices", ()):
            delta = choice["delta"]
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or "")
            finish_reason = choice["finish_reason"] or finish_reason
    message: dict[str, Any] = {
        "role": "assistant",
        "content": answer.text if answer is not None else "".join(content),
        "refusal": None,
    }
    if any(reasoning):
        message["reasoning_content"] = "".join(reasoning)
    result = {
        "id": head.get("id"),
        "object": "chat.completion",
        "created": head.get("created"),
        "model": head.get("model"),
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
        ],
    }
    if usage is None and answer is not None:
        usage = usage_of(answer)
    if usage is not None:
        result["usage"] = usage
    return result


def sse_data(chunk: Chunk) -> str:
    """One chunk as an SSE ``data:`` event."""
    return f"data: {json.dumps(chunk, ensure_ascii=False, separators=(',', ':'))}\n\n"
