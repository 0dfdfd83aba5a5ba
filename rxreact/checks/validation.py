"""Checking a run's draft answers: the typed output first, then the judge.

The agent calls :meth:`DraftChecks.check` after every round that produced a draft answer::

    check(draft):  (validation_started)------(answer_validated)|     judge on the tools scheduler
    check(draft):  (validation_started, answer_validated)|           output_type only, or failed

and reads the verdict from the :class:`DraftOutcome` it filled. :func:`validated_text` is
``agent.text()``'s view when drafts are checked: it holds each round's text back until the
round's verdict, so a rejected draft never shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import reactivex
from pydantic import TypeAdapter, ValidationError
from reactivex import Observable, abc
from reactivex import operators as ops

from rxreact._validate import described
from rxreact.cancellation import CancellationToken
from rxreact.checks.judge import Judge, LLMJudge, Verdict
from rxreact.errors import InvalidArgumentError, JudgeError
from rxreact.events import (
    AnswerValidated,
    FinalAnswer,
    RoundFinished,
    RoundStarted,
    TextDelta,
    ValidationStarted,
)
from rxreact.messages import Message, Usage
from rxreact.model.base import ChatModel
from rxreact.rx._call_once import call_once
from rxreact.rx._immediate import immediately, starting_with

__all__ = [
    "REVISION_INSTRUCTION",
    "DraftChecks",
    "DraftOutcome",
    "OutputSpec",
    "output_spec",
    "validated_text",
]

REVISION_INSTRUCTION = "Your answer was not accepted:\n{feedback}\nWrite a revised answer."
"""The message (as the user's) that carries a rejection's feedback to the model."""

OnJudgeError = Literal["accept", "raise"]


class OutputSpec:
    """A typed answer: the ``response_format`` asking for it and the parser checking it.

    Args:
        output_type: a pydantic model (or any type pydantic validates).
    """

    def __init__(self, output_type: Any) -> None:
        self.output_type = output_type
        try:
            self._adapter: TypeAdapter[Any] = TypeAdapter(output_type)
            schema = self._adapter.json_schema()
        except Exception as error:  # not a type, or one without a JSON schema
            raise InvalidArgumentError(
                f"output_type must be a pydantic model or another type with a JSON schema, got "
                f"{described(output_type)}: {type(error).__name__}"
            ) from None
        name = re.sub(r"[^A-Za-z0-9_-]", "_", getattr(output_type, "__name__", "output"))[:64]
        self.response_format: dict[str, Any] = {
            "type": "json_schema",
            "json_schema": {"name": name or "output", "schema": schema},
        }
        """The ``response_format`` body parameter of every round of a typed run."""

    def parse(self, text: str) -> Any:
        """The answer as ``output_type``; a fenced (```json) block is read too.

        Raises:
            NotTheOutputType: it is not valid JSON for the type (the message is for the
                model, ``errors`` for the program).
        """
        body = text.strip()
        fenced = re.fullmatch(r"```[A-Za-z]*\n(.*)\n```", body, re.DOTALL)
        if fenced:
            body = fenced.group(1)
        try:
            return self._adapter.validate_json(body)
        except ValidationError as error:
            errors = error.errors(include_url=False, include_context=False, include_input=False)
            raise NotTheOutputType(
                f"The answer must be only a JSON value matching the requested schema "
                f"({describe_errors(errors)}).",
                [dict(e) for e in errors],
            ) from None


class NotTheOutputType(ValueError):
    """A draft that does not parse as the output type; ``errors`` are pydantic's (``type``,
    ``loc``, ``msg`` each: JSON-safe, so they travel with a hot run's error)."""

    def __init__(self, message: str, errors: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.errors = errors


def describe_errors(errors: Sequence[Any]) -> str:
    """Validation errors on one line: ``loc: msg; ...``."""
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(answer)'}: {e['msg']}" for e in errors
    )


def output_spec(output_type: Any) -> OutputSpec | None:
    """The :class:`OutputSpec` of a run's ``output_type`` (``None``: no typed answer), made
    where the run is asked for, so that a type pydantic cannot use fails there."""
    return None if output_type is None else OutputSpec(output_type)


@dataclass
class DraftOutcome:
    """What checking one draft found (filled by :meth:`DraftChecks.check`)."""

    passed: bool | None = None
    """As :attr:`AnswerValidated.passed`."""
    feedback: str = ""
    output: Any = None
    """The parsed typed answer, when there is an output type and the draft parsed."""
    output_errors: list[dict[str, Any]] | None = None
    """Why the draft is not the output type (pydantic's errors); ``None`` when it is, or when
    there is no output type."""
    usage: Usage | None = None
    """The judge's usage."""


class DraftChecks:
    """The checks of one agent's drafts: an optional output type, then an optional judge.

    Args:
        judge: a :data:`~rxreact.checks.judge.Judge`; an :class:`LLMJudge` without a model
            gets ``model``.
        model: the agent's model.
        on_judge_error: ``"accept"`` lets the draft stand when the judge fails; ``"raise"``
            ends the run with :class:`~rxreact.JudgeError`.
        scheduler: where a sync judge runs (the agent's tools scheduler).
    """

    def __init__(
        self,
        judge: Judge | None,
        model: ChatModel,
        on_judge_error: OnJudgeError,
        scheduler: abc.SchedulerBase,
    ) -> None:
        if on_judge_error not in ("accept", "raise"):
            raise InvalidArgumentError(
                f"on_judge_error must be 'accept' or 'raise', got {on_judge_error!r}"
            )
        if judge is not None and not callable(judge):
            raise InvalidArgumentError(f"judge must be callable, got {judge!r}")
        self.judge: Judge | None = judge.with_model(model) if isinstance(judge, LLMJudge) else judge
        self.on_judge_error: OnJudgeError = on_judge_error
        self.scheduler: abc.SchedulerBase = scheduler

    def check(
        self,
        round_number: int,
        question: str,
        draft: str,
        history: Sequence[Message],
        output: OutputSpec | None,
        outcome: DraftOutcome,
    ) -> Observable[Any]:
        """``validation_started`` then ``answer_validated``, with ``outcome`` filled before it."""
        started = ValidationStarted(round=round_number)

        def verdict(passed: bool | None, feedback: str = "", error: str | None = None) -> Any:
            outcome.passed, outcome.feedback = passed, feedback
            return AnswerValidated(
                round=round_number, passed=passed, feedback=feedback, error=error
            )

        if output is not None:
            try:
                outcome.output = output.parse(draft)
            except NotTheOutputType as error:
                outcome.output_errors = error.errors
                return immediately(started, verdict(False, str(error)))
        if self.judge is None:
            return immediately(started, verdict(True))

        def judged(value: Any) -> Any:
            if not isinstance(value, Verdict):
                raise JudgeError(f"the judge returned {type(value).__name__}, not a Verdict")
            outcome.usage = value.usage
            return verdict(value.passed, value.feedback)

        def failed(error: Exception, _: Any) -> Observable[Any]:
            if isinstance(error, JudgeError):
                outcome.usage = error.usage
            if self.on_judge_error == "raise":
                if not isinstance(error, JudgeError):
                    error = JudgeError(f"the judge failed: {error}")
                return reactivex.throw(error)
            return immediately(verdict(None, error=f"{type(error).__name__}: {error}"))

        judging = call_once(
            self.judge, (question, draft, tuple(history)), {}, CancellationToken(), self.scheduler
        )
        return starting_with(judging.pipe(ops.map(judged), ops.catch(failed)), started)


def validated_text() -> Callable[[Observable[Any]], Observable[str]]:
    """``agent.text()`` when drafts are checked: each round's text once its verdict allows it.

    ::

        events:  -s-t1-t2-f-v(reject)-s-t3-f-v(pass)-a|     s round_started, t text_delta,
        text:    ----------------------------------(t3)-|    f round_finished, v answer_validated,
                                                             a final_answer

    A round's text is held from its ``round_started``; it goes out at ``round_finished`` of a
    tool round (the sentence written before a call), at a passing ``answer_validated``, or at
    ``final_answer`` (the draft that stands when revisions ran out or the judge could not run);
    the next ``round_started`` drops what a rejected draft wrote.
    """

    def operator(source: Observable[Any]) -> Observable[str]:
        def subscribe(
            observer: abc.ObserverBase[str], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            held: list[str] = []

            def flush() -> None:
                pieces = held[:]
                held.clear()
                for piece in pieces:
                    observer.on_next(piece)

            def on_next(event: Any) -> None:
                if event.path:  # a run of an agent tool: its text is not the answer
                    return
                if isinstance(event, TextDelta):
                    held.append(event.delta)
                elif isinstance(event, RoundStarted):
                    held.clear()
                elif (
                    (isinstance(event, RoundFinished) and event.mode == "tool_call")
                    or (isinstance(event, AnswerValidated) and event.passed)
                    or isinstance(event, FinalAnswer)
                ):
                    flush()

            return source.subscribe(
                on_next, observer.on_error, observer.on_completed, scheduler=scheduler
            )

        return Observable(subscribe)

    return operator
