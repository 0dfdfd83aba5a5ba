"""The events of answer checks: validation (``output_type``, the judge) and guardrails
(re-exported by :mod:`rxreact.events`)."""

from __future__ import annotations

from typing import Literal

from rxreact.events._base import _Event

__all__ = [
    "AnswerValidated",
    "GuardrailKind",
    "GuardrailPassed",
    "GuardrailStarted",
    "GuardrailTripped",
    "ValidationStarted",
]

GuardrailKind = Literal["input", "output"]
"""``input``: a guardrail on the question; ``output``: one on the answer as it streams."""


class ValidationStarted(_Event):
    """The round's draft answer is being checked (``output_type``, then the judge)."""

    type: Literal["validation_started"] = "validation_started"


class AnswerValidated(_Event):
    """The verdict on the round's draft answer.

    Rejected with revisions left: the draft stays in the history, ``feedback`` is added for the
    model and a new round follows. Otherwise the run ends with this draft.
    """

    type: Literal["answer_validated"] = "answer_validated"
    passed: bool | None
    """``True`` accepted, ``False`` rejected, ``None`` the judge could not run (see ``error``;
    with ``on_judge_error="accept"`` the draft stands)."""
    feedback: str = ""
    """Why it was rejected (what the model reads next), or the judge's remark."""
    error: str | None = None
    """Why the judge could not run (HTTP error, unparseable reply after one retry...)."""


class GuardrailStarted(_Event):
    """An input guardrail began checking the question; until ``guardrail_passed``, answer text
    is held back (``text_delta`` events wait, in order, behind the check)."""

    type: Literal["guardrail_started"] = "guardrail_started"
    guardrail: str
    """The guardrail's name (its function's ``__name__``)."""
    kind: GuardrailKind = "input"


class GuardrailPassed(_Event):
    """An input guardrail passed the question."""

    type: Literal["guardrail_passed"] = "guardrail_passed"
    guardrail: str
    """The guardrail's name."""
    kind: GuardrailKind = "input"


class GuardrailTripped(_Event):
    """A guardrail tripped; the run ends with :class:`~rxreact.GuardrailTrippedError` next.

    The round's answer text already delivered is ``withdrawn``, for a UI to take back: with
    ``hold="sentence"`` only sentences that passed (the one that tripped never went out), with
    ``hold="none"`` everything up to the trip.
    """

    type: Literal["guardrail_tripped"] = "guardrail_tripped"
    guardrail: str
    """The guardrail's name."""
    kind: GuardrailKind
    reason: str
    """What the guardrail said."""
    withdrawn: str = ""
    """The tripping round's answer text already delivered, which the trip takes back."""
