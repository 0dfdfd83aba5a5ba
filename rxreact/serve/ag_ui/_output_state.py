"""A typed answer as it forms, as AG-UI shared state: ``{"output": ...}``.

::

    output_partial (the round's first)   STATE_SNAPSHOT {"output": {...}}
    output_partial (the next ones)       STATE_DELTA [JSON Patch ops: what grew]
    output_reset                         STATE_SNAPSHOT {"output": {}}
    final_answer with an output          STATE_SNAPSHOT {"output": <the validated object>}

A partial only grows (:mod:`rxreact.checks.partial_json`), so the patch from one to the next
is ``add`` for new fields and items and ``replace`` for a string that grew.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from rxreact.events import FinalAnswer, OutputPartial, OutputReset

__all__ = ["OutputState", "grown"]

_UNSET: Any = object()


@dataclass
class OutputState:
    """What the client's state holds of the answer so far."""

    shown: Any = _UNSET

    def feed(self, event: Any) -> list[Any]:
        """The AG-UI events for a root ``output_partial`` / ``output_reset`` / ``final_answer``."""
        from ag_ui.core import StateDeltaEvent, StateSnapshotEvent

        kind = type(event)
        if kind is OutputPartial:
            before, self.shown = self.shown, event.output
            if before is _UNSET:
                return [StateSnapshotEvent(snapshot={"output": event.output})]
            return [StateDeltaEvent(delta=grown(before, event.output, "/output"))]
        if kind is OutputReset:
            self.shown = _UNSET
            return [StateSnapshotEvent(snapshot={"output": {}})]
        if kind is FinalAnswer and event.output is not None:
            self.shown = _UNSET
            return [StateSnapshotEvent(snapshot={"output": to_jsonable_python(event.output)})]
        return []


def grown(before: Any, after: Any, path: str) -> list[dict[str, Any]]:
    """JSON Patch operations from ``before`` to ``after``, a value that grew from it."""
    if type(before) is dict and type(after) is dict:
        ops: list[dict[str, Any]] = []
        for key, value in after.items():
            where = f"{path}/{_escaped(key)}"
            if key not in before:
                ops.append({"op": "add", "path": where, "value": value})
            else:
                ops += grown(before[key], value, where)
        return ops
    if type(before) is list and type(after) is list and len(before) <= len(after):
        ops = []
        for index, value in enumerate(after):
            if index < len(before):
                ops += grown(before[index], value, f"{path}/{index}")
            else:
                ops.append({"op": "add", "path": f"{path}/-", "value": value})
        return ops
    if before == after and type(before) is type(after):
        return []
    return [{"op": "replace", "path": path, "value": after}]


def _escaped(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")
