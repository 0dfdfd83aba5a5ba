"""OpenAI Responses API events → rxreact's normalized chunks and responses.

The Responses stream is stateful: output items (a ``message``, a ``function_call``, a
``reasoning`` item) are opened by ``response.output_item.added``, filled by deltas and closed
by ``response.output_item.done``, each at its ``output_index``; the response ends with a typed
terminal event. :class:`ResponsesParser` keeps that state for one stream:

- ``response.output_text.delta`` (and ``response.refusal.delta``) → text;
- ``response.reasoning_summary_text.delta`` and ``response.reasoning_text.delta`` (the
  plain reasoning of open-weight models served by vLLM, Ollama, llama.cpp) → reasoning;
  separate summary parts and reasoning items are joined with a blank line;
- a ``function_call`` item → a :class:`~rxreact.model.chunks.ToolCallDelta` whose ``index``
  is the ``output_index`` (never the item id: compatible servers change ids between events)
  and whose ``id`` is the ``call_id`` (the id a result answers), then its argument deltas;
- ``output_item.done`` closes an item: a ``reasoning`` item becomes a
  :class:`~rxreact.messages.ReplayItem` (provider ``"openai-responses"``) carrying its id,
  summary and the ``encrypted_content`` of this event (it is re-encrypted on every
  serialization, and this is the one to keep); text, summary or arguments that a server put
  only in the finished item (no deltas) are emitted from it;
- ``response.completed`` → ``finish_reason`` ``"tool_calls"`` (a function was called) or
  ``"stop"``, with the usage; ``response.incomplete`` → ``"length"`` (``max_output_tokens``)
  or ``"content_filter"``; the provider's own status or reason is ``provider_finish_reason``;
- ``response.failed`` and ``error`` → :class:`~rxreact.errors.ProviderStreamError`
  (retryable when the code says the service was overloaded or failed, so an error before the
  first delta is retried). Either is terminal: an ``error`` event is not always followed by
  ``response.failed``.

Every other event (``response.created``, ``in_progress``, ``queued``, content parts, the
``.done`` events of text and arguments, events of server-side tools, types added later) is
skipped.

A message item's ``phase`` (``"commentary"``: a preamble before tool calls; ``"final_answer"``)
does not change what its text is: answer text, which the agent already shows as written
before the calls. The API asks for the phase back on every assistant message of later
requests (newer models do worse without it), so it is kept as a replay item too
(``{"type": "message", "phase": ...}``), which the encoder puts on the assistant's text.

Usage is normalized to rxreact's names: ``input_tokens`` → ``prompt_tokens``,
``output_tokens`` → ``completion_tokens``, ``input_tokens_details`` →
``prompt_tokens_details`` (``cached_tokens``...), ``output_tokens_details`` →
``completion_tokens_details`` (``reasoning_tokens``); any other key is kept as sent. Errors
and usage are read by :mod:`rxreact.model.openai._responses_errors`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic_core import from_json

from rxreact.messages import ReplayItem
from rxreact.model.assembly import ResponseAssembler
from rxreact.model.chunks import ChatChunk, ModelResponse, ToolCallDelta
from rxreact.model.http.codec import StreamParser
from rxreact.model.http.surrogates import SurrogateChunk
from rxreact.model.http.wire_errors import protocol_error
from rxreact.model.openai._responses_errors import responses_usage, stream_error

__all__ = ["PROVIDER", "ResponsesParser", "parse_response", "responses_usage"]

PROVIDER = "openai-responses"
"""The tag of the replay items this wire format makes and sends back."""

_INCOMPLETE = {"max_output_tokens": "length", "content_filter": "content_filter"}


def _new_chunk(fields: tuple[Any, ...]) -> ChatChunk:
    return tuple.__new__(ChatChunk, fields)


class ResponsesParser(StreamParser):
    """The events of ONE streamed Responses API answer → chunks (rules: the module doc)."""

    __slots__ = ("_arguments", "_called", "_named", "_reasoned", "_reasoning_at", "_texted")

    def __init__(self) -> None:
        super().__init__()
        self._texted: set[Any] = set()
        """Output indexes of message items that streamed text deltas."""
        self._reasoned: set[Any] = set()
        """Output indexes of reasoning items that streamed reasoning deltas."""
        self._reasoning_at: tuple[Any, Any] | None = None
        """(output_index, summary_index) of the last reasoning emitted: a new one is a new
        paragraph."""
        self._arguments: dict[Any, list[str]] = {}
        """Argument pieces streamed so far, per function_call output index."""
        self._named: set[Any] = set()
        """Output indexes of calls announced with both their call_id and name."""
        self._called = False

    def parse(self, data: str, event: str | None) -> ChatChunk | None:
        lenient = False
        try:
            obj = from_json(data)
        except ValueError as exc:
            # Lone surrogate escapes (an emoji cut in two) are valid for json.loads only.
            try:
                obj = json.loads(data)
            except (ValueError, RecursionError):
                raise protocol_error("invalid JSON", data) from exc
            lenient = True
        if type(obj) is not dict:
            raise protocol_error("expected a JSON object", data)
        try:
            chunk = self.event(obj, event)
        except (AttributeError, TypeError, KeyError, ValueError) as exc:
            # A field of the wrong type or missing: the shape checks are these exceptions.
            raise protocol_error("unexpected event shape", data) from exc
        if lenient and chunk is not None:
            return SurrogateChunk._make(chunk)
        return chunk

    def event(self, obj: dict[str, Any], event: str | None = None) -> ChatChunk | None:
        """The chunk one decoded event carries (``parse`` without the JSON)."""
        kind = obj.get("type") or event
        if kind == "response.output_text.delta":
            self._texted.add(obj.get("output_index"))
            return _new_chunk((_str(obj["delta"]), None, (), None, None, None, (), None))
        if kind == "response.function_call_arguments.delta":
            index = obj.get("output_index")
            delta = _str(obj["delta"])
            self._arguments.setdefault(index, []).append(delta)
            call = (ToolCallDelta(index, None, None, delta),)
            return _new_chunk((None, None, call, None, None, None, (), None))
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            index = obj.get("output_index")
            self._reasoned.add(index)
            return self._reasoning(_str(obj["delta"]), (index, obj.get("summary_index")))
        if kind == "response.output_item.added":
            return self._added(obj.get("output_index"), obj["item"])
        if kind == "response.output_item.done":
            return self._done(obj.get("output_index"), obj["item"])
        if kind == "response.refusal.delta":
            self._texted.add(obj.get("output_index"))
            return ChatChunk(text=_str(obj["delta"]))
        if kind in ("response.completed", "response.incomplete"):
            return self._end(obj.get("response") or {})
        if kind == "response.failed":
            self.done = True
            response = obj.get("response") or {}
            raise stream_error(
                response.get("error") or {"message": "the response failed"}, response
            )
        if kind == "error" or (kind is None and "error" in obj):
            self.done = True
            raise stream_error(obj["error"] if isinstance(obj.get("error"), dict) else obj, {})
        return None

    def _added(self, index: Any, item: dict[str, Any]) -> ChatChunk | None:
        if item.get("type") != "function_call":
            return None
        self._called = True
        call_id, name = item.get("call_id"), item.get("name")
        if not (_optional_str(call_id) and _optional_str(name)):
            raise TypeError("call_id or name is not a string")
        self._arguments.setdefault(index, [])
        if call_id and name:
            self._named.add(index)
        return ChatChunk(tool_calls=(ToolCallDelta(index, call_id, name, None),))

    def _done(self, index: Any, item: dict[str, Any]) -> ChatChunk | None:
        kind = item.get("type")
        if kind == "message":
            phase = item.get("phase")
            replay = () if phase is None else (_phase(phase),)
            text = None
            if index not in self._texted:
                text = "".join(
                    _str(part.get("text") or part.get("refusal") or "")
                    for part in item.get("content") or ()
                    if part.get("type") in ("output_text", "refusal")
                )
            return ChatChunk(text=text or None, replay=replay) if text or replay else None
        if kind == "function_call":
            self._called = True
            streamed = "".join(self._arguments.get(index) or ())
            arguments = _str(item.get("arguments") or "")
            rest = arguments[len(streamed) :] if arguments.startswith(streamed) else ""
            if index in self._named and not rest:
                return None
            call_id, name = item.get("call_id"), item.get("name")
            if not (_optional_str(call_id) and _optional_str(name)):
                raise TypeError("call_id or name is not a string")
            # What the item's announcement lacked (the whole call, when there was none; its
            # call_id or name), with the arguments no delta carried.
            return ChatChunk(tool_calls=(ToolCallDelta(index, call_id, name, rest),))
        if kind == "reasoning":
            replay = (ReplayItem(provider=PROVIDER, data=replay_data(item)),)
            shown: str | None = None
            if index not in self._reasoned:
                texts = [_str(p.get("text") or "") for p in item.get("summary") or ()]
                texts += [_str(p.get("text") or "") for p in item.get("content") or ()]
                joined = "\n\n".join(t for t in texts if t)
                if joined:
                    chunk = self._reasoning(joined, (index, None))
                    shown = chunk.reasoning
            return ChatChunk(reasoning=shown, replay=replay)
        return None

    def _reasoning(self, text: str, at: tuple[Any, Any]) -> ChatChunk:
        last = self._reasoning_at
        if last != at:
            if last is not None and text:
                text = "\n\n" + text
            self._reasoning_at = at
        return _new_chunk((None, text, (), None, None, None, (), None))

    def _end(self, response: dict[str, Any]) -> ChatChunk:
        self.done: bool = True
        status = response.get("status")
        usage = response.get("usage")
        if status == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            finish = _INCOMPLETE.get(reason, "length") if isinstance(reason, str) else "length"
            provider = reason if isinstance(reason, str) else "incomplete"
        else:
            finish = "tool_calls" if self._called else "stop"
            provider = status if isinstance(status, str) else "completed"
        return ChatChunk(
            finish_reason=finish,
            usage=None if usage is None else responses_usage(usage),
            provider_finish_reason=provider,
        )


def _phase(phase: Any) -> ReplayItem:
    """The ``phase`` of a message item, to be sent back on the assistant's text."""
    return ReplayItem(provider=PROVIDER, data={"type": "message", "phase": _str(phase)})


def replay_data(item: dict[str, Any]) -> dict[str, Any]:
    """What of a finished reasoning item goes back on the next request: its id, summary,
    plain reasoning text (open-weight servers) and encrypted content, when each is there."""
    data: dict[str, Any] = {"type": "reasoning", "id": item.get("id"), "summary": []}
    summary = item.get("summary")
    if summary:
        data["summary"] = summary
    if item.get("content"):
        data["content"] = item["content"]
    if item.get("encrypted_content") is not None:
        data["encrypted_content"] = item["encrypted_content"]
    return data


def parse_response(body: bytes | str | dict[str, Any]) -> ModelResponse:
    """A whole (non-streaming) Responses API ``response`` object, read with the stream's rules
    (its output items as ``output_item.done`` events, then the terminal status), so it equals
    the assembled stream of the same answer.

    Raises:
        ProviderStreamError: the body is an error, or a response whose status is ``failed``.
        StreamProtocolError: the body is not a finished response.
    """
    if isinstance(body, dict):
        obj = body
    else:
        try:
            obj = from_json(body)
        except ValueError as exc:
            raise protocol_error("invalid JSON", body) from exc
    if type(obj) is not dict:
        raise protocol_error("expected a JSON object", body)
    if obj.get("error") and obj.get("status") != "failed":
        raise stream_error(obj["error"] if isinstance(obj["error"], dict) else obj, {})
    status = obj.get("status") or "completed"
    if status not in ("completed", "incomplete", "failed") or not isinstance(
        obj.get("output"), list
    ):
        raise protocol_error(f"not a finished response (status {status!r})", obj)
    parser = ResponsesParser()
    assembler = ResponseAssembler()
    try:
        for index, item in enumerate(obj["output"]):
            done = {"type": "response.output_item.done", "output_index": index, "item": item}
            chunk = parser.event(done)
            if chunk is not None:
                assembler.add(chunk)
        end = parser.event({"type": f"response.{status}", "response": obj})
    except (AttributeError, TypeError, KeyError, ValueError) as exc:
        raise protocol_error("unexpected response shape", obj) from exc
    if end is not None:
        assembler.add(end)
    return assembler.response()


def _str(value: Any) -> str:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _optional_str(value: object) -> bool:
    return value is None or type(value) is str
