"""Matching a run's tool calls against expected ones (:class:`ToolCalls`' four modes).

Each mode is a bipartite matching between expected and actual calls (an expected call fits
an actual one when the name is the same and each listed argument equals, or satisfies, the
actual one): ``unordered`` needs a perfect one, ``subset`` one covering every expected call,
``superset`` one covering every actual call, ``strict`` a perfect one inside each round's
slice of the expected list, round after round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import TYPE_CHECKING, Any

from rxreact.evals.evaluators._base import EvalResult
from rxreact.evals.evaluators._words import shown

if TYPE_CHECKING:
    from rxreact.evals._run import ToolCallMade

__all__ = ["ExpectedCall", "expected_calls", "match_calls"]


@dataclass(frozen=True)
class ExpectedCall:
    """A call a run should (or may) make: a name and the arguments to check."""

    name: str
    arguments: Mapping[str, Any] | None = None

    def as_item(self) -> str | tuple[str, Mapping[str, Any]]:
        return self.name if self.arguments is None else (self.name, self.arguments)

    def fits(self, call: ToolCallMade) -> bool:
        if call.name != self.name:
            return False
        for key, want in (self.arguments or {}).items():
            if key not in call.arguments:
                return False
            got = call.arguments[key]
            if callable(want):
                try:
                    if not want(got):
                        return False
                except Exception:  # a predicate that fails on this value: not a fit
                    return False
            elif got != want:
                return False
        return True

    def __str__(self) -> str:
        args = ", ".join(
            f"{k}={_predicate(v) if callable(v) else repr(v)}"
            for k, v in (self.arguments or {}).items()
        )
        return f"{self.name}({args})" if self.arguments is not None else self.name


def _predicate(value: Callable[..., Any]) -> str:
    name = getattr(value, "__name__", "predicate")
    return "<a predicate>" if name == "<lambda>" else f"<{name}>"


def expected_calls(items: Any) -> tuple[ExpectedCall, ...]:
    """``ToolCalls.expected`` parsed: names, ``(name, {args})`` pairs (also as a two-item list
    or a one-key ``{name: {args}}`` mapping, as a dataset file writes them)."""
    if isinstance(items, str | Mapping) or not isinstance(items, Sequence):
        raise ValueError(
            f"expected must be a list of tool names or (name, {{arguments}}) pairs, got "
            f"{shown(items)}"
        )
    calls = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            calls.append(ExpectedCall(item))
        elif isinstance(item, Mapping) and len(item) == 1:
            ((name, args),) = item.items()
            calls.append(_pair(i, name, args))
        elif isinstance(item, Sequence) and len(item) == 2:
            calls.append(_pair(i, item[0], item[1]))
        else:
            raise ValueError(f"expected[{i}] must be a name or a (name, {{arguments}}) pair")
    return tuple(calls)


def _pair(i: int, name: Any, args: Any) -> ExpectedCall:
    if not isinstance(name, str) or not isinstance(args, Mapping):
        raise ValueError(
            f"expected[{i}] must be a (name, {{arguments}}) pair, got {shown((name, args))}"
        )
    return ExpectedCall(name, dict(args))


def _matching(expected: Sequence[ExpectedCall], actual: Sequence[ToolCallMade]) -> dict[int, int]:
    """A maximum matching, actual index -> expected index (augmenting paths: lists are short)."""
    fits = [[j for j, e in enumerate(expected) if e.fits(call)] for call in actual]
    owner: dict[int, int] = {}  # expected index -> actual index

    def augment(a: int, seen: set[int]) -> bool:
        for j in fits[a]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = a
                return True
        return False

    for a in range(len(actual)):
        augment(a, set())
    return {a: j for j, a in owner.items()}


def _listing(items: Sequence[Any]) -> str:
    return ", ".join(str(item) for item in items)


def match_calls(
    expected: Sequence[ExpectedCall], actual: Sequence[ToolCallMade], mode: str
) -> EvalResult:
    """The verdict of ``ToolCalls(expected, mode)`` on the run's calls ``actual``."""
    if mode == "strict":
        return _strict(expected, actual)
    pairs = _matching(expected, actual)
    missing = [e for j, e in enumerate(expected) if j not in pairs.values()]
    beyond = [c for a, c in enumerate(actual) if a not in pairs]
    problems = []
    if missing and mode in ("unordered", "subset"):
        problems.append(f"missing {_listing(missing)}")
    if beyond and mode in ("unordered", "superset"):
        problems.append(f"beyond the expected: {_listing(beyond)}")
    if problems:
        return EvalResult(False, "; ".join(problems))
    return EvalResult(True, f"{len(actual)} call(s) {_AS[mode]}")


_AS = {
    "unordered": "as expected, in some order",
    "subset": "include every expected one",
    "superset": "all among the expected",
}


def _strict(expected: Sequence[ExpectedCall], actual: Sequence[ToolCallMade]) -> EvalResult:
    position = 0
    for round_number, group in groupby(actual, key=lambda c: c.round):
        calls = list(group)
        window = list(expected[position : position + len(calls)])
        pairs = _matching(window, calls)
        if len(pairs) < len(calls):
            stray = next(c for a, c in enumerate(calls) if a not in pairs)
            free = [e for j, e in enumerate(window) if j not in pairs.values()]
            wanted = f"expected {_listing(free)}" if free else "expected no more calls"
            return EvalResult(False, f"round {round_number}: called {stray}, {wanted}")
        position += len(calls)
    if position < len(expected):
        return EvalResult(
            False, f"missing {_listing(expected[position:])} (after {position} call(s))"
        )
    return EvalResult(True, f"{len(actual)} call(s) as expected, in order")
