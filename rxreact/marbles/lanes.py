"""Which lane a recorded value belongs to, and the symbol that stands for it in a marble line.

An agent run splits into lanes by event kind; anything else goes to the ``value`` lane::

    lane         holds                                            symbols
    -----------  -----------------------------------------------  -------------------------------
    chunks       model chunks (recorded with Recorder.wrap_model)  r role  t text  z reasoning
                                                                   c tool call  f finish  u usage
    rounds       round_started, round_mode_decided,               R started  A answer mode
                 round_finished, max_rounds_reached, final_answer T tool mode  f finished
                                                                   M max rounds  F final answer
    reasoning    reasoning_delta                                  a, b, c... one per distinct delta
    text         text_delta                                       a, b, c... one per distinct delta
    tool_calls   tool_call_started, tool_call_args_delta          A started, a arguments (B b...)
    tools        tool_execution_started, tool_progress,           A started, a result (B b...)
                 tool_result, tool_approval_requested             ~ progress, ? approval asked
    checks       context_trimmed, validation_started,             C trimmed  V validating
                 answer_validated, guardrail_started,             P passed  X rejected
                 guardrail_passed, guardrail_tripped              E judge failed
                                                                   G guardrail checking
                                                                   g guardrail passed
                                                                   ! guardrail tripped
    output       output_partial, output_reset (a typed answer     a, b, c... one per partial
                 as it forms)                                     ! reset (its partials withdrawn)
    value        anything else                                    a, b, c... one per distinct value

Events of an agent run as a tool (``agent.as_tool()``, a non-empty ``path``) go to the same
lanes under the agent's name (``researcher/text``, ``researcher/tools``...), after the root's.

Letters of the two tool lanes follow the run's calls in order, so call ``B`` is the same call in
both. Symbols never use digits, ``-``, ``|``, ``#``, ``(``, ``)`` or ``,``: a marble line stays
parseable by ``reactivex``'s own marble parser with the legend as ``lookup``.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from rxreact.model.chunks import ChatChunk

__all__ = ["LANE_ORDER", "lane_of", "symbolize"]

LANE_ORDER = (
    "rounds",
    "chunks",
    "reasoning",
    "text",
    "output",
    "tool_calls",
    "tools",
    "checks",
    "value",
)
"""The order lanes are shown in; other lane names follow, in order of first appearance."""

_EVENT_LANES = {
    "round_started": "rounds",
    "round_mode_decided": "rounds",
    "round_finished": "rounds",
    "max_rounds_reached": "rounds",
    "final_answer": "rounds",
    "reasoning_delta": "reasoning",
    "text_delta": "text",
    "tool_call_started": "tool_calls",
    "tool_call_args_delta": "tool_calls",
    "tool_execution_started": "tools",
    "tool_progress": "tools",
    "tool_approval_requested": "tools",
    "tool_result": "tools",
    "context_trimmed": "checks",
    "validation_started": "checks",
    "answer_validated": "checks",
    "guardrail_started": "checks",
    "guardrail_passed": "checks",
    "guardrail_tripped": "checks",
    "output_partial": "output",
    "output_reset": "output",
}

_LETTERS = string.ascii_lowercase + string.ascii_uppercase
_OVERFLOW = "*"  # stands for every value past the 52nd distinct one


def lane_of(value: Any) -> str:
    """The lane of a recorded value: an agent event's lane, ``chunks``, or ``value``."""
    if isinstance(value, ChatChunk):
        return "chunks"
    if isinstance(value, BaseModel):
        lane = _EVENT_LANES.get(str(getattr(value, "type", "")), "value")
        if getattr(value, "path", ()):  # a nested run's event: its agent's own lanes
            return f"{getattr(value, 'agent', 'agent')}/{lane}"
        return lane
    return "value"


def symbolize(lane: str, values: Sequence[Any]) -> tuple[list[str], dict[str, Any]]:
    """One symbol per value of ``lane`` (in order), and the legend: symbol -> what it stands for.

    Values of the text-like lanes map to themselves in the legend (the delta text, or the value),
    so the legend works as the ``lookup`` of ``reactivex``'s marble parser.
    """
    lane = lane.rpartition("/")[2]  # a nested run's lane is drawn as the root's of that name
    if lane == "chunks":
        symbols = [_chunk_symbol(v) for v in values]
        return symbols, {s: _CHUNK_LEGEND[s] for s in dict.fromkeys(symbols)}
    if lane == "rounds":
        return _round_symbols(values)
    if lane in ("tool_calls", "tools"):
        return _call_symbols(values)
    if lane == "checks":
        return _check_symbols(values)
    if lane == "output":
        return _output_symbols(values)
    if lane in ("text", "reasoning"):
        return _distinct([getattr(v, "delta", v) for v in values])
    return _distinct(list(values))


_CHUNK_LEGEND = {
    "c": "tool-call delta",
    "t": "text",
    "z": "reasoning",
    "f": "finish",
    "u": "usage",
    "r": "role",
    ".": "empty",
}


def _chunk_symbol(chunk: Any) -> str:
    if not isinstance(chunk, ChatChunk):
        return "."
    if chunk.tool_calls:
        return "c"
    if chunk.text:
        return "t"
    if chunk.reasoning:
        return "z"
    if chunk.finish_reason is not None:
        return "f"
    if chunk.usage is not None:
        return "u"
    return "r" if chunk.role else "."


def _by_kind(
    values: Sequence[Any], symbol_of: Callable[[Any], tuple[str, str]]
) -> tuple[list[str], dict[str, Any]]:
    """Symbols of a lane whose symbol depends on each event alone; the legend keeps the first
    label of each symbol."""
    symbols: list[str] = []
    legend: dict[str, Any] = {}
    for value in values:
        symbol, label = symbol_of(value)
        symbols.append(symbol)
        legend.setdefault(symbol, label)
    return symbols, legend


def _round_symbols(values: Sequence[Any]) -> tuple[list[str], dict[str, Any]]:
    return _by_kind(values, _round_symbol)


def _round_symbol(value: Any) -> tuple[str, str]:
    kind = getattr(value, "type", "")
    if kind == "round_mode_decided":
        tool = getattr(value, "mode", "") == "tool_call"
        return ("T", "mode: tool_call") if tool else ("A", "mode: final_answer")
    return {
        "round_started": ("R", "round_started"),
        "round_finished": ("f", "round_finished"),
        "max_rounds_reached": ("M", "max_rounds_reached"),
        "final_answer": ("F", "final_answer"),
    }.get(kind, (_OVERFLOW, "other"))


def _check_symbols(values: Sequence[Any]) -> tuple[list[str], dict[str, Any]]:
    return _by_kind(values, _check_symbol)


def _check_symbol(value: Any) -> tuple[str, str]:
    kind = getattr(value, "type", "")
    if kind == "answer_validated":
        passed = getattr(value, "passed", None)
        symbol = "E" if passed is None else "P" if passed else "X"
        label = {"P": "passed", "X": "rejected", "E": "judge failed"}[symbol]
        feedback = getattr(value, "error", None) or getattr(value, "feedback", "")
        return symbol, label + (f": {feedback}" if feedback else "")
    name = getattr(value, "guardrail", "")
    if kind == "guardrail_tripped":
        return "!", f"{name} tripped: {getattr(value, 'reason', '')}"
    return {
        "validation_started": ("V", "validation_started"),
        "context_trimmed": ("C", "context_trimmed"),
        "guardrail_started": ("G", f"guardrail {name} checking"),
        "guardrail_passed": ("g", f"guardrail {name} passed"),
    }.get(kind, (_OVERFLOW, "other"))


def _output_symbols(values: Sequence[Any]) -> tuple[list[str], dict[str, Any]]:
    """Each partial its own letter (each one is the answer so far, grown); ``!`` a reset."""
    resets = [v for v in values if getattr(v, "type", "") == "output_reset"]
    partials = [getattr(v, "output", v) for v in values if getattr(v, "type", "") != "output_reset"]
    letters, legend = _distinct(partials)
    it = iter(letters)
    symbols = ["!" if getattr(v, "type", "") == "output_reset" else next(it) for v in values]
    if resets:
        legend["!"] = "reset: " + "; ".join(str(getattr(r, "reason", "")) for r in resets)
    return symbols, legend


def _call_symbols(values: Sequence[Any]) -> tuple[list[str], dict[str, Any]]:
    """Calls get letters in order; upper case when one starts, lower case for what follows."""
    letters: dict[tuple[int, str], str] = {}
    by_index: dict[tuple[int, int], tuple[int, str]] = {}  # (round, index) -> call key
    arguments: dict[str, str] = {}
    symbols: list[str] = []
    legend: dict[str, Any] = {}

    def letter(key: tuple[int, str]) -> str:
        if key not in letters:
            n = len(letters)
            letters[key] = string.ascii_uppercase[n] if n < 26 else _OVERFLOW
        return letters[key]

    for value in values:
        kind = getattr(value, "type", "")
        number = int(getattr(value, "round", 0))
        if kind in ("tool_call_started", "tool_execution_started"):
            key = (number, str(getattr(value, "call_id", "")))
            if kind == "tool_call_started":
                by_index[(number, int(getattr(value, "index", 0)))] = key
            symbol = letter(key)
            legend.setdefault(symbol, f"{getattr(value, 'name', '')} ({key[1]})")
        elif kind == "tool_call_args_delta":
            key = by_index.get((number, int(getattr(value, "index", 0))), (number, "?"))
            symbol = letter(key).lower()
            arguments[symbol] = arguments.get(symbol, "") + str(getattr(value, "delta", ""))
            legend[symbol] = arguments[symbol]
        elif kind == "tool_approval_requested":
            symbol = "?"
            key = (number, str(getattr(value, "call_id", "")))
            legend["?"] = (
                f"{legend['?']}, {letter(key)}"
                if "?" in legend
                else "approval asked: " + letter(key)
            )
        elif kind == "tool_progress":
            symbol = "~"
            key = (number, str(getattr(value, "call_id", "")))
            shown = f"{letter(key)}: {getattr(value, 'value', '')!r}"
            before = legend.get("~")
            if before is None:
                legend["~"] = f"progress {shown}"
            elif len(before) < 120:  # a long-running tool's progress would flood the legend
                legend["~"] = f"{before}, {shown}"
        elif kind == "tool_result":
            symbol = letter((number, str(getattr(value, "call_id", "")))).lower()
            content = str(getattr(value, "content", ""))
            failed = getattr(value, "is_error", False)
            legend.setdefault(symbol, f"error: {content}" if failed else content)
        else:
            symbol = _OVERFLOW
            legend.setdefault(symbol, "other")
        symbols.append(symbol)
    return symbols, legend


def _distinct(values: list[Any]) -> tuple[list[str], dict[str, Any]]:
    """A letter per distinct value, in order of first appearance."""
    seen: dict[Any, str] = {}
    symbols: list[str] = []
    legend: dict[str, Any] = {}
    for value in values:
        try:
            key: Any = ("v", value)
            hash(key)
        except TypeError:
            key = ("r", repr(value))
        if key not in seen:
            n = len(seen)
            seen[key] = _LETTERS[n] if n < len(_LETTERS) else _OVERFLOW
            legend.setdefault(seen[key], value)
        symbols.append(seen[key])
    return symbols, legend
