"""``python -m benchmarks.durability``: what durability costs a run, by event log, at 1 and
1,000 concurrent runs.

Each run is the bench conversation without the network (a ``ScriptedModel``: two tool calls,
then an answer of ``--chunks`` chunks), started hot with ``agent.start`` on one of:
``InMemoryEventLog`` (no checkpoints), ``SQLiteEventLog`` (a file in a temporary directory)
or ``RedisEventLog`` (a throwaway ``redis-server``; skipped without one). The durable logs
write every event and a checkpoint per step. Reported: process CPU per run and per chunk,
and the wall time until every run ended and every write was flushed. One process per
variant, so the logs' threads and pools start cold alike.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks.runs import redis_server

LOGS = ("memory", "sqlite", "redis")


def child(log_kind: str, concurrent: int, chunks: int, redis_url: str) -> dict[str, Any]:
    from rxreact import InMemoryEventLog, ReactAgent, RedisEventLog, SQLiteEventLog, tool
    from rxreact.messages import ChatRequest
    from rxreact.model.scripted.model import ScriptedModel
    from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply

    answer = " ".join(f"w{i}" for i in range(chunks))

    def script(request: ChatRequest) -> Reply:
        if not any(m.role == "tool" for m in request.messages):
            return tool_call_reply(("weather", {"city": "Paris"}), ("weather", {"city": "Rome"}))
        return text_reply(answer, pieces=chunks)

    @tool
    def weather(city: str) -> str:
        """The weather."""
        return f"{city}: sunny"

    scratch = tempfile.TemporaryDirectory(prefix="rxreact-bench-durable-")
    log: Any
    if log_kind == "sqlite":
        log = SQLiteEventLog(f"{scratch.name}/runs.db")
    elif log_kind == "redis":
        log = RedisEventLog(redis_url, prefix="durable-bench:")
    else:
        log = InMemoryEventLog(max_runs=2 * concurrent + 10)
    agent = ReactAgent(ScriptedModel(script), [weather], event_log=log)

    def batch() -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        runs = [agent.start("q") for _ in range(concurrent)]
        for run in runs:
            if run.result(timeout=600).answer != answer:
                raise RuntimeError("wrong answer")
        if hasattr(log, "flush") and not log.flush(600):
            raise RuntimeError("writes not flushed")
        return time.perf_counter() - t0, time.process_time() - c0

    batch()  # warm-up
    wall, cpu = min(batch() for _ in range(3))
    if hasattr(log, "close"):
        log.close()
    scratch.cleanup()
    return {"wall_s": wall, "cpu_s": cpu}


def main(argv: list[str]) -> None:
    chunks = 200
    rows: list[tuple[str, int, dict[str, Any]]] = []
    with redis_server() as redis_url:
        for concurrent in (1, 1000):
            for kind in LOGS:
                if kind == "redis" and not redis_url:
                    continue
                args = ["--child", kind, str(concurrent), str(chunks), redis_url or ""]
                out = subprocess.run(
                    [sys.executable, "-m", "benchmarks.durability", *args],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                rows.append((kind, concurrent, json.loads(out.splitlines()[-1])))
    print("| log | concurrent runs | cpu ms/run | cpu us/chunk | wall s (all runs) |")
    print("| --- | --- | --- | --- | --- |")
    for kind, concurrent, result in rows:
        per_run = result["cpu_s"] / concurrent
        print(
            f"| {kind} | {concurrent} | {per_run * 1e3:.2f} | "
            f"{per_run / chunks * 1e6:.2f} | {result['wall_s']:.2f} |"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        kind, concurrent, chunks, url = sys.argv[2:6]
        print(json.dumps(child(kind, int(concurrent), int(chunks), url)))
    else:
        main(sys.argv[1:])
