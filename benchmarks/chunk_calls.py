"""``python -m benchmarks.chunk_calls``: the Python calls a hot run makes per chunk, by event
log: what durability (checkpoints, fencing, parking) adds to the path of every chunk.

Timings on a shared two-core machine move by more than the 5 % a per-chunk target allows;
call counts do not. Each measurement is a fresh process that profiles every thread (from
before the agent makes any) through one hot run: a tool round, then an answer of N chunks
from a ``ScriptedModel``, and the log flushed. The per-chunk cost is the difference between
runs of 600 and 200 chunks, divided by 400, so the run's fixed work cancels out; per function,
so a new call on the chunk path shows by name. A durable log's batched writes are shared by
the chunks a flush carries, so their share moves a little with timing (the rest is exact).

    python -m benchmarks.chunk_calls [--log memory,sqlite,redis] [--src PATH ...]

``--src`` measures another checkout too (an older commit's worktree), side by side.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

SMALL, BIG = 200, 600


def child(kind: str, chunks: int, url: str) -> collections.Counter[str]:
    """Calls by function (``dir/file:name``) through one hot run of ``chunks`` chunks."""
    import rxreact
    from rxreact.model.scripted.replies import text_reply, tool_call_reply

    answer = " ".join(f"w{i}" for i in range(chunks))

    def script(request: Any) -> Any:
        if not any(m.role == "tool" for m in request.messages):
            return tool_call_reply(("weather", {"city": "Paris"}))
        return text_reply(answer, pieces=chunks)

    @rxreact.tool
    def weather(city: str) -> str:
        """The weather."""
        return f"{city}: sunny"

    log: Any
    if kind == "sqlite":
        log = rxreact.SQLiteEventLog(tempfile.mkdtemp(prefix="rxreact-calls-") + "/runs.db")
    elif kind == "redis":
        log = rxreact.RedisEventLog(url, prefix=f"calls-{os.getpid()}:")
    else:
        log = rxreact.InMemoryEventLog()
    counts: collections.Counter[str] = collections.Counter()

    def profile(frame: Any, event: str, _: Any) -> None:
        if event == "call":
            code = frame.f_code
            counts["/".join(code.co_filename.split("/")[-2:]) + ":" + code.co_name] += 1

    threading.setprofile(profile)  # every thread the run starts from here on
    sys.setprofile(profile)
    agent = rxreact.ReactAgent(rxreact.ScriptedModel(script), [weather], event_log=log)
    if agent.start("q").result(timeout=120).answer != answer:
        raise RuntimeError("wrong answer")
    getattr(log, "flush", lambda: None)()
    sys.setprofile(None)
    threading.setprofile(None)  # type: ignore[arg-type]
    return counts


def measure(src: str, kind: str, chunks: int, url: str) -> collections.Counter[str]:
    # This file by its path, from elsewhere: ``rxreact`` is imported from ``src`` alone.
    env = {**os.environ, "PYTHONPATH": src}
    command = [sys.executable, __file__, "--child", kind, str(chunks), url]
    cwd = tempfile.gettempdir()
    out = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=True)
    return collections.Counter(json.loads(out.stdout.splitlines()[-1]))


def per_chunk(src: str, kind: str, url: str) -> tuple[float, dict[str, float]]:
    """Calls per chunk in all, and by function (those at 0.25 a chunk or more)."""
    small, big = measure(src, kind, SMALL, url), measure(src, kind, BIG, url)
    span = BIG - SMALL
    total = (sum(big.values()) - sum(small.values())) / span
    names = {n for n in set(small) | set(big) if abs(big[n] - small[n]) >= span / 4}
    return total, {n: (big[n] - small[n]) / span for n in sorted(names)}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", default="memory,sqlite,redis")
    parser.add_argument("--src", action="append", default=[])
    args = parser.parse_args(argv)
    from benchmarks.runs import redis_server

    sources = [str(Path(__file__).resolve().parents[1]), *args.src]
    with redis_server() as url:
        for kind in args.log.split(","):
            if kind == "redis" and url is None:
                print("redis: skipped (no redis-server)")
                continue
            for src in sources:
                try:
                    total, names = per_chunk(src, kind, url or "")
                except subprocess.CalledProcessError as error:  # an older tree without that log
                    print(f"{kind:7} {src}: failed ({error.stderr.strip().splitlines()[-1]})")
                    continue
                print(f"{kind:7} {src}: {total:.2f} calls per chunk")
                for name, calls in names.items():
                    print(f"        {calls:5.2f}  {name}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        kind, chunks, url = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        print(json.dumps(child(kind, chunks, url)))
    else:
        main(sys.argv[1:])
