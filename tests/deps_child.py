"""A worker that starts a run with deps and is then killed (SIGKILL), for
tests/test_run_context_resume.py.

``python deps_child.py LOG MODEL_URL LOST_AFTER``: start a run given ``Shop("alice")`` on a
SQLiteEventLog file, print the run id, and wait to be killed (its tool never returns here).
"""

from __future__ import annotations

import sys
import threading

from deps_tools import Shop, shop_tools

from rxreact import OpenAIChatModel, ReactAgent, SQLiteEventLog


def main(path: str, model_url: str, lost_after: float) -> None:
    log = SQLiteEventLog(path, lost_after=lost_after)
    model = OpenAIChatModel("mock", base_url=model_url, api_key="sk-test", max_retries=0)
    agent = ReactAgent[Shop](
        model, shop_tools(hang=True), event_log=log, deps_type=Shop, name="shop"
    )
    run = agent.start("Who am I?", conversation_id="c1", deps=Shop("alice"))
    print(run.id, flush=True)
    threading.Event().wait(120)  # until the parent kills this process


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
