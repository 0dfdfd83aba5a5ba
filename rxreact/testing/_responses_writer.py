"""One streamed response of the mock's Responses API dialect, written as the real API's
events: :class:`ResponseWriter` (the event order is in :mod:`rxreact.testing._responses`)."""

from __future__ import annotations

import json
import time
from typing import Any

from rxreact.messages import Usage
from rxreact.model.chunks import ChatChunk
from rxreact.testing._responses_request import seal
from rxreact.testing._wire import error_object

__all__ = ["ResponseWriter"]

_USAGE_NAMES = {
    "prompt_tokens": "input_tokens",
    "completion_tokens": "output_tokens",
    "prompt_tokens_details": "input_tokens_details",
    "completion_tokens_details": "output_tokens_details",
}
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}
_PART_ADDED: dict[str, tuple[str, str, dict[str, Any]]] = {
    "message": (
        "response.content_part.added",
        "content_index",
        {"type": "output_text", "text": "", "annotations": []},
    ),
    "reasoning": (
        "response.reasoning_summary_part.added",
        "summary_index",
        {"type": "summary_text", "text": ""},
    ),
}
"""The part an item of each kind opens with: its event, the index field, the empty part."""


def _usage(usage: Usage | None) -> dict[str, Any] | None:
    if usage is None:
        return None
    raw = usage.model_dump(exclude_none=True)
    return {_USAGE_NAMES.get(k, k): v for k, v in raw.items()}


def _call_id(call_id: str, reasoning_id: str | None) -> str:
    """A call that follows a reasoning item names it after an ``@`` (``call_0@rs_mock_1_0``):
    the real API knows which reasoning a call came from, and so, without keeping state, does
    the mock when the call comes back (see :mod:`~rxreact.testing._responses_request`)."""
    return call_id if reasoning_id is None else f"{call_id}@{reasoning_id}"


class ResponseWriter:
    """One streamed response: output items opened, filled and closed by output index."""

    def __init__(self, model: str, number: int) -> None:
        self._id = f"resp_mock_{number}"
        self._model, self._number = model, number
        self._sequence = 0
        self._output: list[dict[str, Any]] = []  # finished items, for response.completed
        self._open: dict[str, Any] | None = None  # the item being streamed
        self._text = ""  # its text, summary or arguments so far
        self._calls: dict[int | None, int] = {}  # tool-call delta index -> output index
        self._reasoning_id: str | None = None
        self._finish: str | None = None
        self._usage: Usage | None = None

    def _event(self, kind: str, **fields: Any) -> bytes:
        obj = {"type": kind, "sequence_number": self._sequence, **fields}
        self._sequence += 1
        data = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
        return f"event: {kind}\ndata: {data}\n\n".encode()

    def _response(self, status: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "model": self._model,
            "output": list(self._output),
            "usage": None,
            **fields,
        }

    def start(self) -> list[bytes]:
        return [
            self._event("response.created", response=self._response("in_progress")),
            self._event("response.in_progress", response=self._response("in_progress")),
        ]

    def _begin(self, item: dict[str, Any]) -> list[bytes]:
        events = self._close()
        self._open, self._text = item, ""
        events.append(
            self._event("response.output_item.added", output_index=len(self._output), item=item)
        )
        opening = _PART_ADDED.get(item["type"])
        if opening is not None:  # a message or reasoning item opens its first part
            kind, at, part = opening
            events.append(
                self._event(
                    kind,
                    output_index=len(self._output),
                    item_id=item["id"],
                    **{at: 0},
                    part=dict(part),
                )
            )
        return events

    def _close(self) -> list[bytes]:
        item, self._open = self._open, None
        if item is None:
            return []
        index, text, at = len(self._output), self._text, {"item_id": item["id"]}
        events: list[bytes] = []
        if item["type"] == "message":
            part = {"type": "output_text", "text": text, "annotations": []}
            events.append(
                self._event(
                    "response.output_text.done",
                    output_index=index,
                    content_index=0,
                    text=text,
                    **at,
                )
            )
            events.append(
                self._event(
                    "response.content_part.done",
                    output_index=index,
                    content_index=0,
                    part=part,
                    **at,
                )
            )
            item = {**item, "status": "completed", "content": [part]}
        elif item["type"] == "reasoning":
            part = {"type": "summary_text", "text": text}
            events.append(
                self._event(
                    "response.reasoning_summary_text.done",
                    output_index=index,
                    summary_index=0,
                    text=text,
                    **at,
                )
            )
            events.append(
                self._event(
                    "response.reasoning_summary_part.done",
                    output_index=index,
                    summary_index=0,
                    part=part,
                    **at,
                )
            )
            item = {**item, "summary": [part], "encrypted_content": seal(item["id"], text)}
        else:
            events.append(
                self._event(
                    "response.function_call_arguments.done",
                    output_index=index,
                    arguments=text,
                    **at,
                )
            )
            item = {**item, "status": "completed", "arguments": text}
        events.append(self._event("response.output_item.done", output_index=index, item=item))
        self._output.append(item)
        return events

    def chunk(self, chunk: ChatChunk) -> list[bytes]:
        events: list[bytes] = []
        open_type = None if self._open is None else self._open["type"]
        if chunk.reasoning:
            if open_type != "reasoning":
                self._reasoning_id = f"rs_mock_{self._number}_{len(self._output)}"
                events += self._begin(
                    {
                        "type": "reasoning",
                        "id": self._reasoning_id,
                        "summary": [],
                        "encrypted_content": None,
                    }
                )
            self._text += chunk.reasoning
            events.append(
                self._event(
                    "response.reasoning_summary_text.delta",
                    item_id=self._reasoning_id,
                    output_index=len(self._output),
                    summary_index=0,
                    delta=chunk.reasoning,
                )
            )
        if chunk.text:
            if open_type != "message":
                item_id = f"msg_mock_{self._number}_{len(self._output)}"
                events += self._begin(
                    {
                        "type": "message",
                        "id": item_id,
                        "role": "assistant",
                        "status": "in_progress",
                        "content": [],
                    }
                )
            self._text += chunk.text
            assert self._open is not None
            events.append(
                self._event(
                    "response.output_text.delta",
                    item_id=self._open["id"],
                    output_index=len(self._output),
                    content_index=0,
                    delta=chunk.text,
                )
            )
        for delta in chunk.tool_calls:
            if delta.index not in self._calls:
                owner = self._reasoning_id or f"mock_{self._number}"
                item = {
                    "type": "function_call",
                    "id": f"fc_{owner}_{len(self._calls)}",
                    "call_id": _call_id(
                        delta.id or f"call_mock_{len(self._calls)}", self._reasoning_id
                    ),
                    "name": delta.name or "",
                    "arguments": "",
                    "status": "in_progress",
                }
                events += self._begin(item)
                self._calls[delta.index] = len(self._output)
            if delta.arguments:
                assert self._open is not None
                self._text += delta.arguments
                events.append(
                    self._event(
                        "response.function_call_arguments.delta",
                        item_id=self._open["id"],
                        output_index=self._calls[delta.index],
                        delta=delta.arguments,
                    )
                )
        self._finish = chunk.finish_reason or self._finish
        self._usage = chunk.usage or self._usage
        return events

    def fail(self, error: Exception) -> list[bytes]:
        detail = {**error_object(error), "param": None}
        failed = self._response(
            "failed", error={"code": detail["code"], "message": detail["message"]}
        )
        return [self._event("error", error=detail), self._event("response.failed", response=failed)]

    def end(self) -> list[bytes]:
        events = self._close()
        final = self.final()
        return [*events, self._event(f"response.{final['status']}", response=final)]

    def final(self) -> dict[str, Any]:
        """The finished response: what the terminal event carries, and a whole response."""
        usage = _usage(self._usage)
        if self._finish in _INCOMPLETE:
            details = {"reason": _INCOMPLETE[self._finish]}
            return self._response("incomplete", usage=usage, incomplete_details=details)
        return self._response("completed", usage=usage)
