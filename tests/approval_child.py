"""A worker whose run waits for a person's approval, for tests/test_decisions.py.

``python approval_child.py LOG MODEL_URL COUNT_FILE``: start a run whose ``pay`` tool needs
approval, print its id, wait for it to end, print one JSON line: the answer (or the error's
type) and how often ``pay`` ran. LOG is a SQLiteEventLog file, a Redis URL or a Postgres
place (tests/durable_logs.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from durable_logs import open_log

from rxreact import OpenAIChatModel, ReactAgent, tool


def main(where: str, model_url: str, count_file: str) -> None:
    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pays (a person approves it first)."""
        with open(count_file, "a") as calls:
            calls.write("paid\n")
        return f"paid {amount}"

    log = open_log(where)
    model = OpenAIChatModel("mock", base_url=model_url, api_key="sk-test", max_retries=0)
    with log, model:
        run = ReactAgent(model, [pay], event_log=log).start("Pay 3.")
        print(run.id, flush=True)
        try:
            outcome = run.result(timeout=30).answer
        except Exception as error:
            outcome = type(error).__name__
    paid = Path(count_file).read_text().count("paid") if Path(count_file).exists() else 0
    print(json.dumps({"outcome": outcome, "paid": paid}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
