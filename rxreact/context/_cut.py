"""Tool results cut to fit a context budget, with a visible marker: for
:class:`~rxreact.context.budget.ContextBudget` (steps 1 and 3 of its fitting)."""

from __future__ import annotations

from rxreact.context._token_counter import TokenCounter, longest
from rxreact.messages import Message, ToolMessage

__all__ = ["CUT_MARKER", "cut_text", "cut_tool_result", "shrink_turn"]

CUT_MARKER = "\n[... {dropped} characters of this tool result were cut to fit the context budget]"
"""Appended to a tool result that was cut (``{dropped}``: how many characters went)."""


def cut_text(content: str, keep: int) -> str:
    """``content`` cut to its first ``keep`` characters, with the marker saying how many went."""
    if keep >= len(content):
        return content
    return content[:keep] + CUT_MARKER.format(dropped=len(content) - keep)


def cut_tool_result(
    counter: TokenCounter, message: ToolMessage, limit: int, ratio: float
) -> ToolMessage:
    """``message`` cut (with the marker) to at most ``limit`` tokens, or as short as it gets."""
    if not isinstance(message.content, str):
        return message  # a result made of parts (an image) is kept whole
    content = message.content

    def fits(keep: int) -> bool:
        trial = message.model_copy(update={"content": cut_text(content, keep)})
        return counter.message(trial, ratio) <= limit

    keep = longest(len(content), fits)
    return message.model_copy(update={"content": cut_text(content, keep)})


def shrink_turn(
    counter: TokenCounter, turn: list[Message], over: int, ratio: float
) -> tuple[list[Message], int]:
    """Cut the turn's longest tool results until ``over`` tokens are gone (or none is left)."""
    turn = list(turn)
    cut = 0
    while over > 0:
        sizes = [
            (counter.message(m, ratio), i) for i, m in enumerate(turn) if isinstance(m, ToolMessage)
        ]
        if not sizes:
            break
        size, i = max(sizes)
        message = turn[i]
        assert isinstance(message, ToolMessage)
        smaller = cut_tool_result(counter, message, max(0, size - over), ratio)
        saved = size - counter.message(smaller, ratio)
        if saved <= 0:
            break  # every tool result is as short as it gets
        turn[i], over, cut = smaller, over - saved, cut + (message.content != smaller.content)
    return turn, cut
