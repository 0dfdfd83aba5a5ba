"""``only_root`` and ``from_agent``: the events of one run, or of one agent, out of a stream
in which agents run as tools have theirs too (``agent.as_tool()``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactivex import Observable
from reactivex import operators as ops

from rxreact.errors import InvalidArgumentError


def only_root_() -> Callable[[Observable[Any]], Observable[Any]]:
    return ops.filter(lambda event: not event.path)


def from_agent_(name: str) -> Callable[[Observable[Any]], Observable[Any]]:
    if not isinstance(name, str):
        raise InvalidArgumentError(
            f"from_agent() needs an agent name (a str), got {type(name).__name__}"
        )
    return ops.filter(lambda event: event.agent == name)
