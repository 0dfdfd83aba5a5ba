"""Guardrails: quick checks of the question and of the answer *while it streams*.

An **input guardrail** is ``fn(question, history) -> GuardrailResult`` (sync, ``async def``, or
returning an Observable); it runs concurrently with the run's first round. An **output
guardrail** is ``fn(text_so_far) -> GuardrailResult``, called at each sentence boundary of a
round's text (and at the round's end) with the round's text up to there. A result with
``tripped=True`` ends the run with :class:`~rxreact.GuardrailTrippedError`; so does a
guardrail that raises or returns something else (a check that cannot run cannot vouch).

Give them to ``ReactAgent(input_guardrails=[...], output_guardrails=[...], hold=...)``; the
operator that runs them is ``rxreact.operators._guardrails``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, ClassVar, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict
from reactivex import Observable

from rxreact._validate import described
from rxreact.errors import InvalidArgumentError
from rxreact.messages import Message

__all__ = [
    "GuardrailResult",
    "Hold",
    "InputGuardrail",
    "OutputGuardrail",
    "check_guardrails",
    "guardrail_name",
    "sentence_ends",
]


class GuardrailResult(BaseModel):
    """What a guardrail decided."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True, extra="forbid")

    tripped: bool
    """True: the run must end here."""
    reason: str = ""
    """Why it tripped (carried by the ``guardrail_tripped`` event and the error)."""


_Answer: TypeAlias = "GuardrailResult | Awaitable[GuardrailResult] | Observable[GuardrailResult]"
InputGuardrail: TypeAlias = Callable[[str, Sequence[Message]], _Answer]
"""``fn(question, history)``: the question's text and the conversation before it."""
OutputGuardrail: TypeAlias = Callable[[str], _Answer]
"""``fn(text_so_far)``: the round's answer text up to a sentence boundary, or all of it."""
Hold = Literal["sentence", "none"]
"""``sentence``: answer text goes out a sentence at a time, once every output guardrail passed
on it; ``none``: at once, withdrawn by ``guardrail_tripped`` if a later check trips."""


def guardrail_name(guardrail: Callable[..., Any]) -> str:
    """How events and errors name a guardrail: its ``__name__``, else its class's."""
    name = getattr(guardrail, "__name__", None)
    return name if isinstance(name, str) else type(guardrail).__name__


def check_guardrails(kind: str, guardrails: Iterable[Any] | None) -> tuple[Any, ...]:
    """The guardrails as a tuple, each callable.

    Raises:
        InvalidArgumentError: not a list of callables.
    """
    if guardrails is None:
        return ()
    if callable(guardrails) or isinstance(guardrails, str | bytes):
        raise InvalidArgumentError(
            f"{kind}_guardrails must be a list of functions, got {described(guardrails)}: "
            f"write {kind}_guardrails=[...]"
        )
    items = tuple(guardrails)
    for item in items:
        if not callable(item):
            raise InvalidArgumentError(
                f"{kind}_guardrails must hold functions, got {described(item)}"
            )
    return items


# A sentence ends at . ! ? (closing quotes or brackets may follow) before whitespace, or at a
# line break. The whitespace must have arrived: "3." may still become "3.14".
_SENTENCE_END = re.compile(r"[.!?\u2026]+[\"'\u201d\u2019)\]]*\s+|\n+")


def sentence_ends(text: str, start: int = 0) -> int | None:
    """The offset just past the last sentence end in ``text[start:]`` (its whitespace
    included), or ``None`` when none ends there."""
    last = None
    for match in _SENTENCE_END.finditer(text, start):
        last = match.end()
    return last
