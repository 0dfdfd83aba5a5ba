"""``python -m benchmarks.due_claims [--quick]``: what a claim tick costs a Redis event log
with 100 and with 100,000 parked runs (the due index's promise: 100,000 parked runs cost a
claim tick no more than 100 do).

The parked runs are made through the log's own path: ``begin``, an approval request the run
parks on (no deadline), the log closed (it lets its parked runs go: no process beats for
them). Nothing is decided, so no tick may claim any; a tick is ``claim_lost()`` from another
log, timed (median of many) and counted in Redis commands (``INFO commandstats``: the
commands a script runs are counted too), with one run decided in the end to show the tick
still finds what is due. It starts its own ``redis-server`` on a loopback port.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from rxreact.events import ToolApprovalRequested, ToolCallStarted

TICKS = 200


def park_runs(log: Any, run_ids: Sequence[str]) -> None:
    """Begin each run on ``log`` and park it on an approval of call ``k1``, then send it all
    (``log.flush()``). The caller closes ``log`` to leave them ownerless."""
    for run_id in run_ids:
        writer = log.begin(run_id, None, lambda: None)
        writer.append(ToolCallStarted(seq=1, round=1, index=0, call_id="k1", name="pay"))
        writer.park(None)
        writer.append(ToolApprovalRequested(seq=2, round=1, call_id="k1", name="pay", arguments={}))
    if not log.flush(600):
        raise RuntimeError("the parked runs were not all written")


def commands(clients: Sequence[Any]) -> int:
    """Commands the servers ran so far (``INFO`` itself not counted)."""
    total = 0
    for client in clients:
        stats = client.info("commandstats")
        total += sum(v["calls"] for k, v in stats.items() if k != "cmdstat_info")
    return total


def tick_cost(tick: Callable[[], Any], clients: Sequence[Any]) -> int:
    """The commands one ``tick()`` runs on ``clients``' servers."""
    before = commands(clients)
    tick()
    return commands(clients) - before


def _measure(url: str, parked: int, ticks: int) -> tuple[float, int, float]:
    import redis

    from rxreact import RedisEventLog

    prefix = f"due{parked}:"
    owner = RedisEventLog(url, prefix=prefix, lost_after=60)  # few beats while parking
    started = time.perf_counter()
    park_runs(owner, [f"p{i}" for i in range(parked)])
    made_s = time.perf_counter() - started
    owner.close()  # lets its parked runs go
    claimant = RedisEventLog(url, prefix=prefix, lost_after=1)
    try:
        claimant.claim_lost()  # the first look scores what it sees: ticks after it are steady
        times: list[float] = []
        for _ in range(ticks):
            start = time.perf_counter()
            if claimant.claim_lost():
                raise RuntimeError("an undecided parked run was claimed")
            times.append(time.perf_counter() - start)
        with redis.Redis.from_url(url) as direct:
            count = tick_cost(claimant.claim_lost, [direct])
        claimant.decide("p0", "k1", True)
        found = [lost.run_id for lost in claimant.claim_lost()]
        if found != ["p0"]:
            raise RuntimeError(f"the decided run was not claimed: {found}")
    finally:
        claimant.close()
    return statistics.median(times) * 1000, count, made_s


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 instead of 100,000")
    args = parser.parse_args(argv)
    from benchmarks.runs import redis_server

    sizes = (100, 10_000 if args.quick else 100_000)
    with redis_server() as url:
        if url is None:
            print("due_claims: skipped (no redis-server)")
            return
        print("| parked runs (ownerless, undecided) | claim tick, ms (median) | commands |")
        print("|---|---|---|")
        for size in sizes:
            ms, count, made_s = _measure(url, size, TICKS)
            print(f"| {size:,} | {ms:.3f} | {count} |  (parked in {made_s:.1f} s)")


if __name__ == "__main__":
    main()
