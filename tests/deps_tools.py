"""The deps and tools shared by tests/test_run_context_resume.py and its worker."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from rxreact import RunContext, Tool, tool

ran: list[str] = []
"""Whose deps ``whoami`` ran with, in this process."""


@dataclass
class Shop:
    user: str


def shop_tools(*, hang: bool = False) -> list[Tool[..., Any]]:
    """``whoami`` (safe to run twice); with ``hang`` it says so on stdout and never returns
    (the worker is killed in there)."""

    @tool(idempotent=True)
    def whoami(ctx: RunContext[Shop]) -> str:
        """Says whose run this is."""
        ran.append(ctx.deps.user)
        if hang:
            print(f"in whoami for {ctx.deps.user}", flush=True)
            threading.Event().wait(120)
        return ctx.deps.user

    return [whoami]
