"""One agent run in its own OS process, for the cross-process lease tests.

``python lease_worker.py '<json settings>'`` imports and sets up, prints ``ready`` and waits for
a line on stdin (so a test can start its processes together and let each go when it wants),
prints ``busy`` or ``free`` (whether the conversation was held at that moment), then runs one
question and prints the outcome as one JSON line: ``{"answer": ...}`` or
``{"error": <exception type>, "message": ...}``.
"""

from __future__ import annotations

import faulthandler
import json
import sys
from typing import Any

from durable_logs import open_memory

from rxreact import OpenAIChatModel, ReactAgent, RedisChatMemory, RxReactError, SQLiteChatMemory


def main(settings: dict[str, Any]) -> None:
    faulthandler.dump_traceback_later(25, exit=True)  # a hung worker shows where, then exits
    kind, _, where = settings["memory"].partition(":")
    memory: Any = (
        open_memory(where)
        if kind == "postgres"
        else SQLiteChatMemory(where)
        if kind == "sqlite"
        else RedisChatMemory(where, cluster=kind == "redis-cluster")
    )
    agent = ReactAgent(
        OpenAIChatModel("mock", base_url=settings["base_url"], max_retries=0),
        memory=memory,
        on_busy=settings["on_busy"],
        lease_ttl=settings["ttl"],
        busy_timeout=20.0,
    )
    print("ready", flush=True)
    sys.stdin.readline()
    probe = memory.try_acquire("c", "probe", 60)
    if probe is not None:
        memory.release(probe)
    print("free" if probe is not None else "busy", flush=True)
    try:
        outcome = {"answer": agent.call(settings["question"], "c")}
    except RxReactError as error:
        outcome = {"error": type(error).__name__, "message": str(error)}
    print(json.dumps(outcome), flush=True)
    memory.close()


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
