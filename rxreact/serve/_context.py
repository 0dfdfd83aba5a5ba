"""What a protocol's routes get from the app, in one :class:`ServeContext`: the run registry
(so the per-user run limit counts every protocol's runs), the signed run ids and the app's
settings.

Apart from :mod:`rxreact.serve._protocols`, which imports each room's routes when it mounts
them: the routes import this, not the module that imports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rxreact.serve._body import HTTPProblem
from rxreact.serve._runs import RunRegistry
from rxreact.serve.auth import RunIds

__all__ = ["ServeContext"]


@dataclass(frozen=True)
class ServeContext:
    """What a protocol's routes share with the app."""

    runs: RunRegistry
    run_ids: RunIds
    model_name: str
    max_message_chars: int
    heartbeat: float
    refuse: Callable[[BaseException], HTTPProblem | None]
    """The HTTP answer to a run that could not start (busy conversation, too many runs)."""
    authenticated: bool = False
    """Whether the app has users (``authenticate``): a protocol that describes its own
    authentication (the A2A agent card) says so."""
