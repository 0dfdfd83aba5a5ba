"""The owner process of :mod:`rxreact.testing.conformance._processes`: it starts a run on the
store under test and waits to be killed (SIGKILL).

``python -m rxreact.testing.conformance._child MODE FACTORY PLACE MODEL_URL COUNT_DIR``: open
the log with ``FACTORY`` (``module:callable``, called as ``callable(PLACE, lost_after=...)``),
start the run of ``MODE`` (``tool``: its ``charge`` tool hangs; ``park``: its ``pay`` tool
waits for an approval), print the run id and wait.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from pathlib import Path
from typing import Any

from rxreact.agent.react_agent import ReactAgent
from rxreact.model.openai.client import OpenAIChatModel
from rxreact.tools.tool import Tool, tool

__all__ = ["LOST_AFTER", "calls", "make_tools", "open_log"]

LOST_AFTER = 1.0


def open_log(factory: str, place: str, **options: Any) -> Any:
    """The log ``factory`` (``module:callable``) opens at ``place``."""
    module, _, name = factory.partition(":")
    return getattr(importlib.import_module(module), name)(place, **options)


def calls(directory: Path, name: str) -> int:
    """How often tool ``name`` ran, in any process."""
    path = directory / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def make_tools(directory: Path, *, hang: bool) -> list[Tool[..., Any]]:
    """``charge`` (never safe twice; with ``hang`` it does not return), ``lookup``
    (idempotent) and ``pay`` (needs a person's approval); each counts its calls."""

    def count(name: str) -> None:
        with open(directory / name, "a") as counted:
            counted.write(f"{os.getpid()}\n")

    @tool
    def charge(amount: int) -> str:
        """Charges the card."""
        count("charge")
        if hang:
            threading.Event().wait(120)  # killed in here
        return f"charged {amount}"

    @tool(idempotent=True)
    def lookup(city: str) -> str:
        """Looks the weather up."""
        count("lookup")
        return f"{city}: sunny"

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pays (a person approves it first)."""
        count("pay")
        return f"paid {amount}"

    return [charge, lookup, pay]


def main(mode: str, factory: str, place: str, model_url: str, directory: str) -> None:
    log = open_log(factory, place, lost_after=LOST_AFTER)
    model = OpenAIChatModel("mock", base_url=model_url, api_key="sk-test", max_retries=0)
    agent = ReactAgent(model, make_tools(Path(directory), hang=True), event_log=log)
    run = agent.start("Charge 5, look Paris up." if mode == "tool" else "Pay 3.")
    if mode == "park":
        asked = threading.Event()

        def on_next(event: Any) -> None:
            if event.type == "tool_approval_requested":
                asked.set()

        run.events().subscribe(on_next)
        asked.wait(30)
        log.flush()
    print(run.id, flush=True)
    threading.Event().wait(120)  # until the parent kills this process


if __name__ == "__main__":
    main(*sys.argv[1:6])
