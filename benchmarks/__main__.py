"""``python -m benchmarks``: every workload against a loopback mock, one table each.

Workloads (``--only`` takes their numbers or names):

1. ``per_chunk``  CPU per streamed chunk, rxreact's full loop vs the httpx floors
2. ``fixed``      fixed cost of a short conversation, time to first answer token
3. ``tools``      k tools of latency L finish their round in about L
4. ``scale``      1,000 concurrent paced runs: threads, RSS, added latency
5. ``slow``       a slow subscriber: peak RSS stays bounded
6. ``peers``      the peer frameworks through the shared harness (or its reference table)
7. ``runs``       hot runs: in-memory and Redis event logs, fan-out to 100 subscribers
8. ``queued``     one run per conversation: lease cost and queued hand-off vs a cold stream
9. ``conversations`` 10,000 concurrent slow conversations: RSS, threads, latency
10. ``workers``   1 and 2 worker processes on one Redis: chunks/s, what Redis adds per run
11. ``serve``     concurrent SSE clients through the web app vs a bare Starlette relay
12. ``gc``        tracked objects per live streaming run (counted, not timed)
13. ``anthropic`` AnthropicModel vs a hand-written httpx reader and the anthropic SDK
14. ``responses`` OpenAIResponsesModel vs a hand-written httpx reader and the openai SDK
15. ``gemini``    GeminiModel vs a hand-written httpx reader and google-genai
16. ``bedrock``   BedrockModel (Converse) vs a hand-written reader
17. ``evals``     1,000 cases evaluated in virtual time: vs the runs alone, pydantic-evals

``--quick`` shrinks every workload (about a minute in all); the default takes about
five minutes on a 2-core machine. ``--json FILE`` also writes the raw numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from benchmarks import (
    anthropic_adapter,
    bedrock_adapter,
    conversations,
    evals,
    fixed_cost,
    gc_objects,
    gemini_adapter,
    peers,
    per_chunk,
    queued_run,
    responses,
    runs,
    scale,
    serve_path,
    slow_subscriber,
    tool_concurrency,
    workers,
)
from benchmarks._harness import Table, mock_server

WORKLOADS = (
    "per_chunk",
    "fixed",
    "tools",
    "scale",
    "slow",
    "peers",
    "runs",
    "queued",
    "conversations",
    "workers",
    "serve",
    "gc",
    "anthropic",
    "responses",
    "gemini",
    "bedrock",
    "evals",
)


def _selected(only: str | None) -> list[str]:
    if not only:
        return list(WORKLOADS)
    chosen = []
    for item in only.split(","):
        item = item.strip()
        name = WORKLOADS[int(item) - 1] if item.isdigit() else item
        if name not in WORKLOADS:
            sys.exit(f"unknown workload {item!r}; choose from {', '.join(WORKLOADS)}")
        chosen.append(name)
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small configurations")
    parser.add_argument("--only", help="comma-separated workloads (numbers or names)")
    parser.add_argument("--no-peers", action="store_true", help="print the reference table")
    parser.add_argument("--json", help="write the raw numbers to this file")
    args = parser.parse_args(argv)
    chosen = _selected(args.only)
    tables: dict[str, Table] = {}
    started = time.perf_counter()
    with mock_server() as url:
        print(f"mock server at {url}; workloads: {', '.join(chosen)}\n", flush=True)
        if "fixed" in chosen:
            tables["fixed"] = fixed_cost.run(url, args.quick)
        if "per_chunk" in chosen:
            fixed = fixed_cost.as_fixed(tables["fixed"]) if "fixed" in tables else None
            tables["per_chunk"] = per_chunk.run(url, args.quick, fixed)
        for name, workload in (
            ("tools", tool_concurrency),
            ("scale", scale),
            ("slow", slow_subscriber),
            ("runs", runs),
            ("queued", queued_run),
            ("conversations", conversations),
            ("workers", workers),
            ("serve", serve_path),
            ("gc", gc_objects),
        ):
            if name in chosen:
                tables[name] = workload.run(url, args.quick)
    # The adapters' workloads start mocks of their own wire formats.
    if "anthropic" in chosen:
        short, per_chunk_table = anthropic_adapter.run(args.quick)
        tables["anthropic"] = short
        tables["anthropic_per_chunk"] = per_chunk_table
    if "responses" in chosen:
        tables["responses"] = responses.run(args.quick)
    if "gemini" in chosen:
        tables["gemini"], tables["gemini_per_chunk"] = gemini_adapter.run(args.quick)
    if "bedrock" in chosen:
        tables["bedrock"], tables["bedrock_per_chunk"] = bedrock_adapter.run(args.quick)
    if "evals" in chosen:  # scripted and in-process: no mock server
        tables["evals"] = evals.run(None, args.quick)
    if "peers" in chosen:
        ratio = None
        if "per_chunk" in tables:
            stacks = tables["per_chunk"].data["stacks"]
            ratio = stacks["rxreact"]["cpu_s"] / stacks["httpx_async"]["cpu_s"]
        tables["peers"] = peers.run(args.quick, ratio, [] if args.no_peers else None)
    for name in tables:
        print(tables[name].render(), flush=True)
    print(f"total {time.perf_counter() - started:.0f} s")
    if args.json:
        raw: dict[str, Any] = {name: table.data for name, table in tables.items()}
        with open(args.json, "w") as out:
            json.dump(raw, out, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
