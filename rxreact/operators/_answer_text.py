"""The answer text a run's output guardrails check: :class:`AnswerText`.

Every round's text, one after the other, and the offsets in it where a check is due (a sentence
end, a round's end). :class:`~rxreact.operators._guardrails.RunGuard` decides what is held and
released; this keeps the text and says which piece of it to check next.
"""

from __future__ import annotations

from rxreact.checks.guardrails import sentence_ends

__all__ = ["AnswerText"]

_TAIL = 8  # characters kept to find a sentence end split across two deltas


class AnswerText:
    """The run's own answer text (all rounds); offsets index it. Not thread-safe: the guard
    calls it under its lock.

    Args:
        checked: whether output guardrails check it (else no check offsets are marked).
    """

    __slots__ = ("_checked", "_pieces", "_tail", "length", "points", "round_start")

    def __init__(self, checked: bool) -> None:
        self._checked = checked
        self._pieces: list[str] = []
        self._tail = ""
        self.length = 0
        """The text's length so far."""
        self.round_start = 0
        """Where the current round's text starts."""
        self.points: list[tuple[int, int]] = []
        """The offsets to check, each with the start of its round."""

    def add(self, delta: str, approved: int) -> int:
        """Add ``delta``; mark the last sentence end it completes. Returns the new length."""
        before = self.length
        self._pieces.append(delta)
        self.length += len(delta)
        if self._checked:
            window = self._tail + delta
            end = sentence_ends(window)
            if end is not None:
                self.mark(before - len(self._tail) + end, approved)
            self._tail = window[-_TAIL:]
        return self.length

    def mark(self, offset: int, approved: int) -> None:
        """Mark ``offset`` for a check, unless nothing new of its round lies before it."""
        last = self.points[-1][0] if self.points else approved
        if offset > max(last, self.round_start):
            self.points.append((offset, self.round_start))

    def next_check(self) -> tuple[str, int]:
        """The text to check next and the offset it ends at: the first waiting round's, up to
        its latest marked offset (the earlier marks of that round are covered by it)."""
        round_start = self.points[0][1]
        same = [p for p in self.points if p[1] == round_start]
        offset = same[-1][0]
        self.points = self.points[len(same) :]
        return self.text(round_start, offset), offset

    def void_round(self) -> None:
        """Forget the current round's checks (it starts over; its text stays, unchecked, before
        the next ``round_start``)."""
        self.points = [point for point in self.points if point[1] != self.round_start]
        self._tail = ""

    def text(self, start: int, end: int) -> str:
        return "".join(self._pieces)[start:end]

    def clear(self) -> None:
        """Drop the text (the run ended)."""
        self._pieces = []
