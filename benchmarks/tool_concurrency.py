"""Workload 3: k tools of latency L run concurrently: the tool round takes about L.

The mock asks for ``k`` parallel ``get_weather`` calls; each call sleeps ``L`` (a sync tool on
the agent's tools pool of 16 threads, and an ``async def`` tool on rxreact's event loop). The
span is first tool start to last tool end, measured inside the tools; the overhead is span - L.
The async floor (``asyncio.gather``) is shown for the largest k.
"""

from __future__ import annotations

from benchmarks._harness import Table, run_child

POOL = 16


def run(url: str, quick: bool) -> Table:
    latency_ms = 100 if quick else 200
    ks = (2, POOL) if quick else (1, 2, 4, 8, POOL)
    sessions = 2 if quick else 3
    table = Table(
        f"3. Tool concurrency (k tools x L={latency_ms} ms, {sessions} sessions, N=10)",
        ["stack", "tool", "k", "span ms", "span - L ms", "parallel"],
    )
    rows = []
    for stack, kinds in (("rxreact", ("sync", "async")), ("httpx_async", ("async",))):
        for kind in kinds:
            for k in ks if stack == "rxreact" else ks[-1:]:
                args = [stack, url, "10", str(sessions), str(k), str(latency_ms)]
                r = run_child("_sessions", [*args, "1" if kind == "async" else "0"])
                span = r["tool_span_s"] * 1e3
                rows.append({"stack": stack, "tool": kind, "k": k, "span_ms": span})
                parallel = "yes" if span < 1.5 * latency_ms else "NO"
                table.add(stack, kind, k, span, span - latency_ms, parallel)
    table.notes.append(f"k up to the tools pool size ({POOL}); median span over the sessions")
    table.data = {"latency_ms": latency_ms, "rows": rows}
    return table
