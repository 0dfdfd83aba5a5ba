"""A process on the other side of a shared event log, for tests/test_runs_redis.py and
tests/test_runs_sqlite.py. LOG is a Redis URL, or the path of a SQLiteEventLog file.

``python runs_child.py follow LOG RUN_ID AFTER``: follow the run, print ``ready`` once
subscribed, then one JSON line: the seqs, the answer text and the error's type and attributes.

``python runs_child.py own LOG MODEL_URL LOST_AFTER``: start a run on the model (whose
script hangs), print its id, then one JSON line with how it ended (cancelled by a request from
another process, or never: the parent kills this process).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

from rxreact import OpenAIChatModel, ReactAgent, RedisEventLog, SQLiteEventLog, follow


def open_log(where: str, **options: Any) -> RedisEventLog | SQLiteEventLog:
    if where.startswith("redis://"):
        return RedisEventLog(where, **options)
    return SQLiteEventLog(where, **options)


def follow_run(url: str, run_id: str, after: int) -> None:
    seqs: list[int] = []
    text: list[str] = []
    ended: dict[str, Any] = {}
    done = threading.Event()

    def on_next(event: Any) -> None:
        seqs.append(event.seq)
        if event.type == "text_delta":
            text.append(event.delta)

    def on_error(error: Exception) -> None:
        ended["error"] = {"type": type(error).__name__, "attrs": vars(error), "str": str(error)}
        done.set()

    with open_log(url) as log:
        follow(run_id, log, after=after).subscribe(on_next, on_error, done.set)
        print("ready", flush=True)
        done.wait(30)
    print(json.dumps({"seqs": seqs, "text": "".join(text), **ended}, default=str), flush=True)


def own_run(url: str, model_url: str, lost_after: float) -> None:
    with (
        open_log(url, lost_after=lost_after) as log,
        OpenAIChatModel("mock", base_url=model_url, api_key="sk-test", max_retries=0) as model,
    ):
        run = ReactAgent(model, event_log=log).start("q", conversation_id="shared")
        print(run.id, flush=True)
        try:
            run.result(timeout=30)
            outcome = "finished"
        except Exception as error:
            outcome = type(error).__name__
    print(json.dumps({"outcome": outcome}), flush=True)


if __name__ == "__main__":
    mode, url, *rest = sys.argv[1:]
    if mode == "follow":
        follow_run(url, rest[0], int(rest[1]))
    else:
        own_run(url, rest[0], float(rest[1]))
