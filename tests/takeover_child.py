"""A worker that starts a run and is then killed (SIGKILL), for tests/test_takeover.py.

``python takeover_child.py LOG MODEL_URL COUNT_DIR LOST_AFTER [MEMORY [LEASE_TTL]]``: start a
run with the tools of :func:`make_tools` (``charge`` hangs here, so the parent can kill the
worker inside it), print the run id, and wait to be killed. LOG is the path of a
SQLiteEventLog file, a Redis URL or a Postgres place (tests/durable_logs.py). With MEMORY (a
SQLiteChatMemory file or a Postgres place) the run is on conversation ``c1``, with a
conversation lease of LEASE_TTL seconds (default one).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

from durable_logs import open_log, open_memory

from rxreact import OpenAIChatModel, ReactAgent, Tool, tool


def count(directory: Path, name: str) -> None:
    """One line per call of tool ``name``, from whichever process ran it."""
    with open(directory / name, "a") as calls:
        calls.write(f"{os.getpid()}\n")


def calls(directory: Path, name: str) -> int:
    path = directory / name
    return len(path.read_text().splitlines()) if path.exists() else 0


def make_tools(directory: Path, *, hang: bool) -> list[Tool[..., Any]]:
    """``charge`` (not safe to run twice; with ``hang`` it never returns) and ``lookup``
    (idempotent)."""

    @tool
    def charge(amount: int) -> str:
        """Charges the card."""
        count(directory, "charge")
        if hang:
            threading.Event().wait(120)  # killed in here
        return f"charged {amount}"

    @tool(idempotent=True)
    def lookup(city: str) -> str:
        """Looks the weather up."""
        count(directory, "lookup")
        return f"{city}: sunny"

    return [charge, lookup]


def main(
    path: str, model_url: str, directory: str, lost_after: float, memory: str, lease_ttl: float
) -> None:
    log = open_log(path, lost_after=lost_after)
    model = OpenAIChatModel("mock", base_url=model_url, api_key="sk-test", max_retries=0)
    tools = make_tools(Path(directory), hang=True)
    if memory:
        agent = ReactAgent(
            model, tools, event_log=log, memory=open_memory(memory), lease_ttl=lease_ttl
        )
        run = agent.start("Charge 5 and look Paris up.", conversation_id="c1")
    else:
        agent = ReactAgent(model, tools, event_log=log)
        run = agent.start("Charge 5 and look Paris up.")
    print(run.id, flush=True)
    threading.Event().wait(120)  # until the parent kills this process


if __name__ == "__main__":
    main(
        sys.argv[1],
        sys.argv[2],
        sys.argv[3],
        float(sys.argv[4]),
        "".join(sys.argv[5:6]),
        float(sys.argv[6]) if len(sys.argv) > 6 else 1.0,
    )
