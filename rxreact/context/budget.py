"""Keeping every request inside the model's context window: :class:`ContextBudget`.

Before every request the agent calls :meth:`ContextBudget.fit`::

    history:  [u1 a1 t1 a1' | u2 a2 | u3 a3 t3 a3' | (u4 a4 t4 ...)]     (current turn in brackets)
    fitted:   [system] [summary of u1..a2]? [u3 a3 t3 a3'] [u4 a4 t4 ...]

1. any tool result longer than ``tool_result_share`` of the budget is cut, with a visible marker;
2. the oldest groups of earlier messages go first, a group being a user message and what follows
   it up to the next one, so an assistant ``tool_calls`` message always travels with its
   results; the system prompt and the current turn stay;
3. if the current turn alone is still too long, its longest tool results are cut further.

``strategy="summarize"`` puts one model-written summary (a non-streamed request) where the
dropped messages were, and keeps it per conversation so a later run reuses it (or extends it
with what was dropped since, in one request) instead of summarizing everything again.

Tokens are estimated by ``count_tokens(text)`` plus a few per message. The default counter is
``tiktoken`` when it is installed (``pip install rxreact[tiktoken]``) and its encoding loads,
else ~4 characters a token; both are calibrated by the ``prompt_tokens`` the provider reported
for the previous request of the conversation. Cutting tool results is
:mod:`rxreact.context._cut`'s job.
"""

from __future__ import annotations

import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from rxreact.context._cut import CUT_MARKER, cut_text, cut_tool_result, shrink_turn
from rxreact.context._token_counter import TokenCounter, longest, remember
from rxreact.errors import InvalidArgumentError
from rxreact.messages import (
    AssistantMessage,
    ChatRequest,
    Message,
    SystemMessage,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from rxreact.messages._labels import content_label

__all__ = ["CUT_MARKER", "SUMMARY_INSTRUCTIONS", "ContextBudget", "FittedContext"]

SUMMARY_INSTRUCTIONS = (
    "Summarize the conversation below for the assistant that will continue it: keep the facts, "
    "names, numbers, decisions, tool results and open questions it will need; drop small talk. "
    "Write plain prose, at most {words} words."
)
"""The system message of the summary request (``{words}``: the summary's length limit)."""

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"


@dataclass
class FittedContext:
    """What :meth:`ContextBudget.fit` decided for one request."""

    messages: list[Message]
    """The request's messages (with a summary placeholder's place, see ``summarize``)."""
    dropped: int
    """How many earlier messages are not sent (summarized, with ``summarize``)."""
    cut: int
    """How many tool results were cut."""
    estimated_tokens: int
    """The estimated prompt tokens of the request (tools included)."""
    summarize: list[Message] = field(default_factory=list)
    """With ``strategy="summarize"``: the dropped messages a summary must cover; the agent puts
    :meth:`ContextBudget.summary_message` right after the system prompt."""


class ContextBudget:
    """How many tokens a request may hold, and how to make it fit.

    Args:
        max_tokens: the model's context window, in tokens.
        reserve: tokens kept free for the reply (default: a quarter of ``max_tokens``).
        strategy: ``"trim"`` drops the oldest turns; ``"summarize"`` replaces them by one
            model-written summary.
        count_tokens: ``count_tokens(text) -> int``; default tiktoken or ~4 characters a token,
            calibrated by the provider's reported ``prompt_tokens`` (a counter given here is
            trusted as is).
        tool_result_share: the largest share of the budget one tool result may take.
        summary_tokens: the longest summary (default: a quarter of the budget, at most 1,000).
    """

    def __init__(
        self,
        max_tokens: int,
        reserve: int | None = None,
        strategy: Literal["trim", "summarize"] = "trim",
        count_tokens: Callable[[str], int] | None = None,
        *,
        tool_result_share: float = 0.5,
        summary_tokens: int | None = None,
    ) -> None:
        reserve = max_tokens // 4 if reserve is None else reserve
        if max_tokens <= 0 or reserve < 0 or reserve >= max_tokens:
            raise InvalidArgumentError(
                f"need max_tokens > reserve >= 0, got max_tokens={max_tokens}, reserve={reserve}"
            )
        if strategy not in ("trim", "summarize"):
            raise InvalidArgumentError(f"strategy must be 'trim' or 'summarize', got {strategy!r}")
        if not 0 < tool_result_share <= 1:
            raise InvalidArgumentError(
                f"tool_result_share must be in (0, 1], got {tool_result_share}"
            )
        self.max_tokens: int = max_tokens
        self.reserve: int = reserve
        self.strategy: Literal["trim", "summarize"] = strategy
        self.tool_result_share: float = tool_result_share
        self.summary_tokens: int = summary_tokens or min(1000, self.available // 4)
        self._counter = TokenCounter(count_tokens)
        self._lock = threading.Lock()
        # conversation -> (messages covered, hash of those messages, summary)
        self._summaries: OrderedDict[str, tuple[int, int, str]] = OrderedDict()

    def __repr__(self) -> str:
        return (
            f"ContextBudget(max_tokens={self.max_tokens}, reserve={self.reserve}, "
            f"strategy={self.strategy!r})"
        )

    @property
    def available(self) -> int:
        """Tokens a request may hold: ``max_tokens - reserve``."""
        return self.max_tokens - self.reserve

    # -- counting ----------------------------------------------------------------------------

    def estimate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec] = (), key: str = ""
    ) -> int:
        """Estimated prompt tokens of a request with these messages and tools."""
        ratio = self._counter.ratio(key)
        return sum(self._counter.message(m, ratio) for m in messages) + self._counter.tools(
            tools, ratio
        )

    def calibrate(self, key: str, request: ChatRequest, prompt_tokens: int | None) -> None:
        """Learn from the provider's ``prompt_tokens`` for ``request`` (default counter only)."""
        self._counter.calibrate(key, request, prompt_tokens)

    # -- fitting -----------------------------------------------------------------------------

    def fit(
        self,
        head: Sequence[Message],
        earlier: Sequence[Message],
        turn: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        key: str = "",
    ) -> FittedContext:
        """Fit a request: ``head`` (the system prompt) and ``turn`` (the current turn) stay,
        ``earlier`` (loaded history) loses its oldest groups first. See the module doc.

        Args:
            head: messages that always go first.
            earlier: the conversation before the current turn (tool calls closed).
            turn: the current turn so far.
            tools: the tools the request declares (they take tokens too).
            key: the conversation (calibration and stored summaries are per conversation).
        """
        ratio = self._counter.ratio(key)
        budget = self.available - self._counter.tools(tools, ratio)
        cap = max(1, int(budget * self.tool_result_share))
        cut = 0
        original, earlier, turn = earlier, list(earlier), list(turn)
        for messages in (earlier, turn):
            for i, message in enumerate(messages):
                if isinstance(message, ToolMessage) and self._counter.message(message, ratio) > cap:
                    messages[i], cut = cut_tool_result(self._counter, message, cap, ratio), cut + 1
        sizes = [self._counter.message(m, ratio) for m in earlier]
        # after[i]: the tokens of earlier[i:], for every possible cut at i
        after = list(itertools.accumulate(reversed(sizes), initial=0))[::-1]
        fixed = sum(self._counter.message(m, ratio) for m in (*head, *turn))
        starts = [i for i, m in enumerate(earlier) if isinstance(m, UserMessage)]
        bounds = [0, *(s for s in starts if s > 0), len(earlier)]

        def first_fit(allowance: int) -> tuple[int, int]:
            """The smallest droppable prefix that fits, and what the summary takes with it."""
            for boundary in bounds:
                extra = allowance if boundary > 0 else 0
                if fixed + after[boundary] + extra <= budget:
                    return boundary, extra
            return len(earlier), allowance if earlier else 0

        summarizing = self.strategy == "summarize"
        allowance = self._counter.message(self.summary_message(""), ratio) + self.summary_tokens
        dropped, extra = first_fit(allowance if summarizing else 0)
        if summarizing and fixed + after[dropped] + extra > budget:
            summarizing = False  # no room left for a summary: drop without one
            dropped, extra = first_fit(0)
        kept = earlier[dropped:]
        over = fixed + after[dropped] + extra - budget
        if over > 0:
            turn, more = shrink_turn(self._counter, turn, over, ratio)
            cut += more
        messages = [*head, *kept, *turn]
        estimated = self.estimate(messages, tools, key) + extra
        return FittedContext(
            messages=messages,
            dropped=dropped,
            cut=cut,
            estimated_tokens=estimated,
            summarize=list(original[:dropped]) if summarizing else [],
        )

    # -- summaries ---------------------------------------------------------------------------

    def _stored(self, key: str, dropped: Sequence[Message]) -> tuple[int, str] | None:
        """The stored summary of ``key`` if it covers a prefix of ``dropped``."""
        with self._lock:
            stored = self._summaries.get(key)
        if stored is None or stored[0] > len(dropped):
            return None
        covered, digest, text = stored
        return (covered, text) if hash(tuple(dropped[:covered])) == digest else None

    def stored_summary(self, key: str, dropped: Sequence[Message]) -> str | None:
        """The stored summary of conversation ``key`` when it covers exactly ``dropped``."""
        stored = self._stored(key, dropped)
        return stored[1] if stored is not None and stored[0] == len(dropped) else None

    def summary_request(self, key: str, dropped: Sequence[Message]) -> ChatRequest:
        """The non-streamed request for a summary of ``dropped``: extends the stored summary
        with the messages dropped since when there is one, else summarizes them all."""
        stored = self._stored(key, dropped)
        if stored is not None and stored[0] > 0:
            previous, new = stored[1], dropped[stored[0] :]
        else:
            previous, new = None, dropped
        transcript = "\n".join(_transcript_line(m) for m in new)
        if previous is not None:
            transcript = f"{SUMMARY_PREFIX}{previous}\n\nThen:\n{transcript}"
        ratio = self._counter.ratio(key)
        room = self.available - self.summary_tokens - 200  # the instructions, the overhead
        if self._counter.text(transcript, ratio) > room:  # the summary request must fit too
            keep = longest(
                len(transcript), lambda n: self._counter.text(transcript[:n], ratio) <= room
            )
            transcript = cut_text(transcript, keep)
        words = max(20, int(self.summary_tokens * 0.7))
        return ChatRequest(
            messages=(
                SystemMessage(content=SUMMARY_INSTRUCTIONS.format(words=words)),
                UserMessage(content=transcript),
            ),
            options={"max_tokens": self.summary_tokens},
        )

    def store_summary(self, key: str, dropped: Sequence[Message], text: str) -> str:
        """Keep ``text`` as the summary of ``dropped`` (the first messages of conversation
        ``key``); returns it, cut to ``summary_tokens`` if the model wrote more."""
        ratio = self._counter.ratio(key)
        if self._counter.text(text, ratio) > self.summary_tokens:
            keep = longest(
                len(text), lambda n: self._counter.text(text[:n], ratio) <= self.summary_tokens
            )
            text = text[:keep]
        with self._lock:
            remember(self._summaries, key, (len(dropped), hash(tuple(dropped)), text))
        return text

    @staticmethod
    def summary_message(text: str) -> UserMessage:
        """The message carrying a summary in the request (right after the system prompt)."""
        return UserMessage(content=SUMMARY_PREFIX + text)


def _transcript_line(message: Message) -> str:
    if isinstance(message, AssistantMessage):
        calls = "; ".join(f"{c.name}({c.arguments})" for c in message.tool_calls)
        text = message.content or ""
        return f"assistant: {text}" + (f" [calls: {calls}]" if calls else "")
    if isinstance(message, ToolMessage):
        return f"tool {message.name or message.tool_call_id}: {content_label(message.content)}"
    return f"{message.role}: {content_label(message.content)}"
