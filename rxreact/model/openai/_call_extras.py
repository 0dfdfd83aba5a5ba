"""A chat-completions tool call's provider extras: kept from the answer, sent back unchanged.

Gemini's OpenAI-compatible endpoint puts a thought signature on a tool call,
``"extra_content": {"google": {"thought_signature": "..."}}``, and Gemini 3 refuses (HTTP 400
INVALID_ARGUMENT) the next request whose assistant message comes back without it. rxreact's
:class:`~rxreact.messages.ToolCall` is the provider-neutral call, so the extras travel as
:class:`~rxreact.messages.ReplayItem` s on the assistant message (through chunk assembly,
every chat memory and checkpoint, as Anthropic's signatures do), tagged with the endpoint
that made them (:func:`replay_tag`: for chat completions another base URL is another
provider) and sent back only there, each on the call it came with.

Google's rules (``ai.google.dev/gemini-api/docs/thought-signatures``): of parallel calls only
the first carries a signature; each step of sequential calls carries its own; the API checks
the calls of the *current turn* (everything after the last user message), where the first
call of each step must carry its signature. Calls that came from another model have none;
there the documented placeholder (:data:`SKIP_SIGNATURE`) is sent when the model is told to
(``OpenAIChatModel(signature_placeholder=...)``, which the ``gemini-openai:`` preset sets).
"""

from __future__ import annotations

from typing import Any

from rxreact.messages import ReplayItem

__all__ = [
    "SKIP_SIGNATURE",
    "attach_extras",
    "call_extras",
    "replay_tag",
]

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""The value Google documents for a call whose signature is missing (a history from another
model): Gemini skips its check for that call."""

_KIND = "tool_call_extra"


def replay_tag(base_url: str) -> str:
    """The provider tag of the replay items made by the chat-completions API at ``base_url``."""
    return f"openai-chat {base_url}"


def call_extras(raw_calls: list[Any], tag: str) -> tuple[ReplayItem, ...]:
    """The replay items of the ``tool_calls`` items that carry ``extra_content`` (none: ``()``).

    Each names its call by the provider's ``id`` and, for a call without one, its ``index``.
    """
    items = []
    for call in raw_calls:
        extra = call.get("extra_content")
        if extra:
            if type(extra) is not dict:
                raise TypeError("extra_content is not an object")
            items.append(
                ReplayItem(
                    provider=tag,
                    data={
                        "type": _KIND,
                        "id": call.get("id") or None,
                        "index": call.get("index"),
                        "extra_content": extra,
                    },
                )
            )
    return tuple(items)


def attach_extras(
    messages: list[dict[str, Any]],
    replays: list[tuple[ReplayItem, ...] | None],
    tag: str,
    placeholder: str | None,
) -> None:
    """Put each encoded assistant tool call's own extras back on it (in place).

    Args:
        messages: the encoded ``messages`` of a request.
        replays: for each of them, the replay items of the assistant message it encodes
            (``None`` for other roles).
        tag: this endpoint's :func:`replay_tag`: another's items stay out.
        placeholder: sent as the thought signature of the first call of each step of the
            current turn that has none of its own; ``None`` sends nothing there.
    """
    turn_start = _turn_start(messages)
    for i, (message, replay) in enumerate(zip(messages, replays, strict=True)):
        calls = message.get("tool_calls")
        if not calls:
            continue
        own = [item.data for item in replay or () if item.provider == tag]
        for position, call in enumerate(calls):
            extra = _extra_of(own, call["id"], position)
            if extra is not None:
                call["extra_content"] = extra
        first = calls[0]
        if placeholder is not None and i > turn_start and not _signature_of(first):
            extra = dict(first.get("extra_content") or {})
            extra["google"] = {**(extra.get("google") or {}), "thought_signature": placeholder}
            first["extra_content"] = extra


def _turn_start(messages: list[dict[str, Any]]) -> int:
    """The last user message, except one right after tool results (the forced round's
    instruction: Gemini may merge it with them, and then the turn goes on)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user" and not (i and messages[i - 1].get("role") == "tool"):
            return i
    return -1


def _extra_of(own: list[dict[str, Any]], call_id: str, position: int) -> Any:
    for data in own:
        if data.get("type") == _KIND and data.get("id") == call_id:
            return data["extra_content"]
    # A call the provider gave no id: its index, which these providers count from 0.
    for data in own:
        if data.get("type") == _KIND and data.get("id") is None and data.get("index") == position:
            return data["extra_content"]
    return None


def _signature_of(call: dict[str, Any]) -> Any:
    google = (call.get("extra_content") or {}).get("google")
    return google.get("thought_signature") if isinstance(google, dict) else None
