"""The cost of OpenTelemetry tracing per streamed chunk: workload 1's conversation with
tracing off (no provider: the default) and on (the SDK recording every span).

``python -m benchmarks.tracing_cost [--quick]``. ``off`` is the ``rxreact`` stack of workload 1
with ``opentelemetry-api`` installed and no provider set; ``on`` passes an SDK
``TracerProvider`` with a ``SimpleSpanProcessor`` into an in-memory exporter.
"""

from __future__ import annotations

import sys

from benchmarks._harness import Table, mock_server
from benchmarks.per_chunk import measure

STACKS = ("rxreact", "rxreact_otel", "httpx_async")
LABELS = {
    "rxreact": "rxreact, tracing off (no provider)",
    "rxreact_otel": "rxreact, tracing on (SDK, in-memory exporter)",
    "httpx_async": "httpx async (floor)",
}


def run(url: str, quick: bool) -> Table:
    chunks, sessions, repeats = (2000, 5, 1) if quick else (2000, 20, 3)
    result = measure(url, chunks, sessions, repeats, stacks=STACKS)
    off = result["rxreact"]["cpu_s"]
    table = Table(
        f"Tracing cost (N={chunks}, {sessions} sessions x {repeats} repeats)",
        ["stack", "cpu us/chunk", "x tracing off", "wall ms"],
    )
    for stack in STACKS:
        r = result[stack]
        table.add(
            LABELS[stack], r["cpu_s"] / chunks * 1e6, f"{r['cpu_s'] / off:.3f}", r["wall_s"] * 1e3
        )
    return table


if __name__ == "__main__":
    with mock_server() as url:
        print(run(url, "--quick" in sys.argv).render())
