"""The deps and tools shared by tests/test_run_context_resume.py and its worker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rxreact import RunContext, Tool, tool

ran: list[str] = []
"""Whose deps ``whoami`` ran with, in this process."""


@dataclass
class Shop:
    user: str


def shop_tools() -> list[Tool[..., Any]]:
    @tool
    def whoami(ctx: RunContext[Shop]) -> str:
        """Says whose run this is."""
        ran.append(ctx.deps.user)
        return ctx.deps.user

    return [whoami]
