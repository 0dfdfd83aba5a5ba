"""Evaluators of the answer: its text, or its typed output.

::

    EqualsExpected()          output == case.expected       (a case without expected: skipped)
    Equals("sunny")           output == "sunny"
    Contains("sunny")         "sunny" in the answer (a key of a dict output, an item of a list)
    Matches(r"\\d+ °C")        the regex is found in the answer's text
    IsInstance("Forecast")    the typed output is a Forecast (by class name, any base class)
    OutputValid()             the run's typed answer validated against its output_type
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from rxreact.evals.evaluators._base import EvalResult, Evaluator
from rxreact.evals.evaluators._words import shown

if TYPE_CHECKING:
    from rxreact.evals._context import EvalContext

__all__ = ["Contains", "Equals", "EqualsExpected", "IsInstance", "Matches", "OutputValid"]


def _plain(value: Any) -> Any:
    """A typed output as the JSON-like value a dataset file holds for it."""
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def _no_answer(ctx: EvalContext) -> EvalResult:
    return EvalResult(False, "no answer: the run failed")


def _equal(output: Any, expected: Any) -> bool:
    return bool(output == expected or _plain(output) == _plain(expected))


@dataclass(frozen=True)
class EqualsExpected(Evaluator):
    """The output equals the case's ``expected`` (a typed output compares as its JSON value);
    skipped (passing, as a label) for a case without one."""

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the output equals the case's ``expected``; skip a case without one."""
        expected = ctx.case.expected
        if expected is None:
            return EvalResult("skipped", "the case has no expected output")
        if ctx.output is None:
            return _no_answer(ctx)
        if _equal(ctx.output, expected):
            return EvalResult(True, f"equals the expected {shown(expected)}")
        return EvalResult(False, f"expected {shown(expected)}, got {shown(ctx.output)}")


@dataclass(frozen=True)
class Equals(Evaluator):
    """The output equals ``value``."""

    value: Any

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the output equals ``value``."""
        if ctx.output is None:
            return _no_answer(ctx)
        if _equal(ctx.output, self.value):
            return EvalResult(True, f"equals {shown(self.value)}")
        return EvalResult(False, f"expected {shown(self.value)}, got {shown(ctx.output)}")


@dataclass(frozen=True)
class Contains(Evaluator):
    """``value`` is in the answer: a substring of its text, a key (or a sub-dict) of a dict
    output, an item of a list output."""

    value: Any
    case_sensitive: bool = True

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when ``value`` is in the output (substring, key or sub-dict, or item)."""
        output = ctx.output
        if output is None:
            return _no_answer(ctx)
        output = _plain(output)
        value = _plain(self.value)
        if isinstance(output, str):
            text, needle = output, str(value)
            if not self.case_sensitive:
                text, needle = text.casefold(), needle.casefold()
            found = needle in text
        elif isinstance(output, dict) and isinstance(value, dict):
            found = all(k in output and output[k] == v for k, v in value.items())
        elif isinstance(output, dict | list | tuple | set):
            found = value in output
        else:
            found = str(value) in str(output)
        if found:
            return EvalResult(True, f"contains {shown(self.value)}")
        return EvalResult(False, f"{shown(self.value)} not in {shown(output)}")


@dataclass(frozen=True)
class Matches(Evaluator):
    """The regular expression ``regex`` is found in the answer's text (``re.search``)."""

    regex: str

    def __post_init__(self) -> None:
        re.compile(self.regex)  # a bad pattern fails here, not on every run

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when ``regex`` is found in the answer's text."""
        answer = ctx.answer
        if answer is None:
            return _no_answer(ctx)
        match = re.search(self.regex, answer)
        if match:
            return EvalResult(True, f"matches /{self.regex}/ at {shown(match.group(0))}")
        return EvalResult(False, f"no match for /{self.regex}/ in {shown(answer)}")


@dataclass(frozen=True)
class IsInstance(Evaluator):
    """The output is an instance of a class named ``type_name`` (its class or a base class;
    ``"str"`` for an untyped answer)."""

    type_name: str

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the output's class, or one of its bases, is named ``type_name``."""
        output = ctx.output
        if output is None:
            return _no_answer(ctx)
        names = ctx.run.output_type_names
        if self.type_name in names:
            return EvalResult(True, f"is a {self.type_name}")
        return EvalResult(False, f"is a {names[0] if names else '?'}, not a {self.type_name}")


@dataclass(frozen=True)
class OutputValid(Evaluator):
    """The run's typed answer validated (``evaluate(..., output_type=...)``)."""

    def evaluate(self, ctx: EvalContext) -> EvalResult:
        """Pass when the run's answer validated against its ``output_type``."""
        final = ctx.run.final
        if final is None:
            return _no_answer(ctx)
        if final.output is None:
            if final.validated is None:
                return EvalResult(False, "the run asked for no output_type")
            return EvalResult(False, "the answer never validated against the output type")
        return EvalResult(True, f"a valid {type(final.output).__name__}")
