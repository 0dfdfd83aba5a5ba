"""A tool that runs until its run is cancelled: for tests of what cancelling reaches."""

from __future__ import annotations

import threading
from collections.abc import Callable

from rxreact import CancellationToken, Tool, tool


class SlowTool:
    """``tool`` (named ``slow``) blocks until its token is set; ``running`` is set once it runs.

    Args:
        started: called once the tool runs (e.g. to wake an asyncio event), besides ``running``.
    """

    def __init__(self, started: Callable[[], None] | None = None) -> None:
        self.running = threading.Event()
        self.tokens: list[CancellationToken] = []

        @tool
        def slow(token: CancellationToken) -> str:
            """Waits until cancelled."""
            self.tokens.append(token)
            self.running.set()
            if started is not None:
                started()
            token.wait(10)
            return "late"

        self.tool: Tool[[CancellationToken], str] = slow
