"""``<think>…</think>`` in answer text: split a model's inline reasoning from its answer.

Reasoning models served without a reasoning parser (DeepSeek-R1 and Qwen3 on plain
vLLM/Ollama/llama.cpp) write their reasoning into ``content``, wrapped in ``<think>`` tags.
Only a text that *starts* (after optional whitespace) with ``<think>`` is split; a tag
anywhere else is part of the answer.

Whitespace: the reasoning is stripped at both ends, and whitespace between ``</think>`` and
the answer is dropped (models put ``\\n\\n`` there). Other whitespace is kept as written.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["ThinkTagSplitter", "split_think"]

_OPEN = "<think>"
_CLOSE = "</think>"


class _State(Enum):
    DECIDING = 1  # only whitespace or a prefix of "<think>" seen so far
    THINKING = 2  # inside <think>, waiting for </think>
    AFTER = 3  # just after </think>: dropping whitespace before the answer
    ANSWER = 4  # passing text straight through


class ThinkTagSplitter:
    """Splits streamed answer text into reasoning and answer; one instance per stream.

    Holds back only what it must: while deciding, at most the leading whitespace and a
    partial ``<think>``; inside the block, a partial ``</think>`` and trailing whitespace.
    A text that does not start with ``<think>`` passes straight through once that is clear.

    Example::

        splitter = ThinkTagSplitter()
        splitter.feed("<thi")            # ("", "")
        splitter.feed("nk>Hmm.</think>") # ("Hmm.", "")
        splitter.feed("\\n\\nHello")       # ("", "Hello")
        splitter.flush()                  # ("", "")
    """

    __slots__ = ("_held", "_reasoning_started", "_state")

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._state = _State.DECIDING
        self._held = ""
        """Text received but not returned yet."""
        self._reasoning_started = False
        """Some non-whitespace reasoning was returned (leading whitespace is dropped)."""

    @property
    def passing_through(self) -> bool:
        """True once the text is known to be answer only: every later piece passes unchanged
        and :meth:`flush` returns nothing (a caller may stop feeding)."""
        return self._state is _State.ANSWER

    def feed(self, text: str) -> tuple[str, str]:
        """Take the next piece of text; return ``(reasoning, answer)`` ready to show now."""
        state = self._state
        if state is _State.ANSWER:
            return "", text
        if state is _State.DECIDING:
            held = self._held + text
            head = held.lstrip()
            if not head.startswith(_OPEN):
                if head and not _OPEN.startswith(head):
                    self._held = ""
                    self._state = _State.ANSWER
                    return "", held
                self._held = held  # only whitespace, or "<thi…" so far
                return "", ""
            self._held = ""
            self._state = _State.THINKING
            text = head[len(_OPEN) :]
        if self._state is _State.THINKING:
            return self._think(text)
        return "", self._after(text)

    def flush(self) -> tuple[str, str]:
        """End of text: return whatever is still held back, and reset for another stream."""
        held, state, started = self._held, self._state, self._reasoning_started
        self._reset()
        if state is _State.DECIDING:
            return "", held  # whitespace or an unfinished "<thi": answer text after all
        if state is _State.THINKING:
            # No </think> came: what is held is reasoning, minus the trailing whitespace.
            reasoning = held.rstrip()
            return (reasoning if started else reasoning.lstrip()), ""
        return "", ""

    def _think(self, text: str) -> tuple[str, str]:
        buf = self._held + text
        end = buf.find(_CLOSE)
        if end >= 0:
            reasoning = buf[:end].rstrip()
            if not self._reasoning_started:
                reasoning = reasoning.lstrip()
            self._held = ""
            self._state = _State.AFTER
            return reasoning, self._after(buf[end + len(_CLOSE) :])
        # Hold back a possible start of "</think>" and trailing whitespace (it is dropped if
        # the block ends right after it).
        cut = len(buf)
        lt = buf.rfind("<", max(0, len(buf) - len(_CLOSE) + 1))
        if lt >= 0 and _CLOSE.startswith(buf[lt:]):
            cut = lt
        shown = buf[:cut].rstrip()
        self._held = buf[len(shown) :]
        if not self._reasoning_started:
            shown = shown.lstrip()
            self._reasoning_started = bool(shown)
        return shown, ""

    def _after(self, text: str) -> str:
        answer = text.lstrip()
        if answer:
            self._state = _State.ANSWER
        return answer


def split_think(text: str) -> tuple[str | None, str | None]:
    """Split a whole text into ``(reasoning, answer)``; ``None`` for an empty part.

    Same rules as :class:`ThinkTagSplitter` (it is one, fed once).
    """
    splitter = ThinkTagSplitter()
    reasoning, answer = splitter.feed(text)
    more_reasoning, more_answer = splitter.flush()
    return (reasoning + more_reasoning) or None, (answer + more_answer) or None
