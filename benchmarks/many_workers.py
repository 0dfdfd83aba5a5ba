"""Many workers on one database, measured: ``rxreact serve`` workers on SQLite,
Redis, Redis Cluster and Postgres against one worker on the in-memory log.

``python -m benchmarks.many_workers [--runs 2000] [--concurrency 200] [--workers 4]
[--backends memory,sqlite,redis,redis-cluster,postgres]`` (``make many-workers``; not part of
``make test`` or ``make bench``). For each backend:

1. **measure**: ``--workers`` processes (:mod:`benchmarks._worker_fleet`; the baseline
   ``memory``: one) serve ``--runs`` runs against the paced mock, ``--concurrency`` in flight
   (:mod:`benchmarks._worker_client`). Each run is a tool round (two parallel ``get_weather``
   calls) and an answer of ``--chunks`` chunks, every mock event ``--delay-ms`` after the one
   before. Reported: runs/s, p50/p99 run latency and time to first token, the workers' database
   round trips (:mod:`benchmarks._serve_worker`) and the database's own command count per
   answer chunk, and the bytes stored per run (:mod:`benchmarks._worker_backends`).
2. **kill**: the same load again; when half the runs have finished one worker is SIGKILLed.
   Checked: every run's final answer seen once and correct, no tool call executed twice (the
   tool log, ``O_APPEND``), how many runs were taken over and how long after the kill their
   streams went on.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._harness import Table, mock_server, percentile
from benchmarks._worker_backends import BACKENDS, Backend, available, open_backend, uptime
from benchmarks._worker_client import run_load
from benchmarks._worker_fleet import Fleet
from benchmarks._worker_kill import first_errors, kill_pass


def _serve_args(url: str, backend: Backend, lost_after: float) -> list[str]:
    durable = ["--lost-after", str(lost_after)] if backend.name != "memory" else []
    return [
        *("--base-url", url, "--model", "mock-model", "--limit-concurrency", "5000"),
        *("--tools", "benchmarks._serve_worker:get_weather", *durable, *backend.serve_args),
    ]


def _ms(values: list[float], q: float) -> float:
    return percentile(values, q) * 1e3 if values else float("nan")


def measure(
    fleet: Fleet, backend: Backend, runs: int, concurrency: int, chunks: int
) -> dict[str, Any]:
    """The measure pass: throughput, latency, round trips and bytes over one load."""
    counts0, server0, cpu0 = fleet.counts(), backend.server_stats(), fleet.cpu_s()
    load = run_load(fleet.urls, runs, concurrency, tag="m")
    counts1, server1, cpu1 = fleet.counts(), backend.server_stats(), fleet.cpu_s()
    ok = [run for run in load.runs if run.correct(chunks)]
    latencies = [run.finished - run.started for run in ok if run.finished]
    ttft = [run.first_token - run.started for run in ok if run.first_token]
    delivered = len(ok) * chunks
    trips = {key: counts1.get(key, 0) - counts0.get(key, 0) for key in counts1}
    server = {key: server1[key] - server0.get(key, 0) for key in server1}
    return {
        "runs": runs,
        "correct": len(ok),
        "wall_s": load.wall_s,
        "runs_per_s": len(ok) / load.wall_s,
        "p50_ms": _ms(latencies, 0.5),
        "p99_ms": _ms(latencies, 0.99),
        "ttft_p50_ms": _ms(ttft, 0.5),
        "ttft_p99_ms": _ms(ttft, 0.99),
        "worker_cpu_s": cpu1 - cpu0,
        "worker_cpu_ms_per_run": (cpu1 - cpu0) / runs * 1e3,
        "round_trips": trips,
        "round_trips_per_chunk": sum(trips.values()) / delivered if delivered else float("nan"),
        "server": server,
        "commands_per_chunk": server.get("commands", float("nan")) / delivered
        if delivered
        else float("nan"),
        "bytes_per_run": server["bytes"] / runs,
        "db_cpu_ms_per_run": server.get("cpu_s", float("nan")) / runs * 1e3,
        "errors": first_errors(load),
    }


def run_backend(
    name: str,
    url: str,
    workdir: Path,
    *,
    runs: int,
    concurrency: int,
    workers: int,
    chunks: int,
    lost_after: float,
    passes: tuple[str, ...] = ("measure", "kill"),
    kill_after: float = 0.5,
) -> dict[str, Any]:
    """One backend's passes; its results (``skipped``: why it was not measured, ``failed``:
    what went wrong)."""
    why = available(name)
    if why is not None:
        return {"backend": name, "skipped": why}
    result: dict[str, Any] = {"backend": name, "uptime_before": uptime()}
    folder = workdir / name
    folder.mkdir()
    try:
        sizes = (runs, concurrency, workers, chunks, lost_after, kill_after)
        _passes(name, url, folder, result, sizes, passes)
    except Exception as error:  # one backend's failure is reported, the others still run
        result["failed"] = f"{type(error).__name__}: {str(error)[:2000]}"
    result["uptime_after"] = uptime()
    return result


def _passes(
    name: str,
    url: str,
    folder: Path,
    result: dict[str, Any],
    sizes: tuple[int, int, int, int, float, float],
    passes: tuple[str, ...],
) -> None:
    runs, concurrency, workers, chunks, lost_after, kill_after = sizes
    with open_backend(name, folder) as backend:
        n = 1 if name == "memory" else workers
        fleet = Fleet(n, _serve_args(url, backend, lost_after), folder, "w")
        try:
            run_load(fleet.urls, 2 * n, 2 * n, tag="warm")  # imports, pools, schema
            if "measure" in passes:
                result["measure"] = measure(fleet, backend, runs, concurrency, chunks)
            if "kill" in passes and name != "memory":
                result["kill"] = kill_pass(fleet, backend, runs, concurrency, chunks, kill_after)
        finally:
            fleet.stop()


_KILL_DETAIL = (
    "finals", "aborted", "aborted_went_on", "wrong", "seen_twice", "lost_trails",
    "twice_trails", "resent_with_tool_runs", "twice_examples", "errors", "history_examples",
)  # fmt: skip


def tables(results: list[dict[str, Any]], args: argparse.Namespace) -> list[Table]:
    speed = Table(
        f"Many workers: {args.workers} workers, {args.runs} runs, {args.concurrency} in flight, "
        f"a tool round + {args.chunks} chunks every {args.delay_ms} ms",
        ["backend", "workers", "ok", "runs/s", "p50 ms", "p99 ms", "TTFT p50", "TTFT p99",
         "worker CPU ms/run", "db CPU ms/run", "round trips/chunk", "db commands/chunk",
         "bytes/run"],
    )  # fmt: skip
    kills = Table(
        "One worker SIGKILLed at the midpoint",
        ["backend", "final seen once", "lost", "seen twice", "taken over", "sent again",
         "recovered p50 s", "max s", "tool runs", "ran twice", "histories not once"],
    )  # fmt: skip
    base = next(
        (r["measure"] for r in results if r["backend"] == "memory" and "measure" in r), None
    )
    for r in results:
        if "skipped" in r or "failed" in r:
            speed.add(r["backend"], "-", "not measured", *(["-"] * 10))
            why = r.get("skipped") or r["failed"]
            speed.notes.append(f"{r['backend']}: not measured ({why})")
            continue
        m = r.get("measure")
        if m:
            ratio = f" ({m['runs_per_s'] / base['runs_per_s']:.2f}x)" if base else ""
            speed.add(
                r["backend"], 1 if r["backend"] == "memory" else args.workers,
                f"{m['correct']}/{m['runs']}", f"{m['runs_per_s']:.1f}{ratio}",
                m["p50_ms"], m["p99_ms"], m["ttft_p50_ms"], m["ttft_p99_ms"],
                m["worker_cpu_ms_per_run"], m["db_cpu_ms_per_run"],
                f"{m['round_trips_per_chunk']:.2f}",
                f"{m['commands_per_chunk']:.2f}", f"{m['bytes_per_run']:,.0f}",
            )  # fmt: skip
            speed.notes.append(
                f"{r['backend']}: round trips {json.dumps(m['round_trips'])}, database "
                f"{json.dumps({k: round(v) for k, v in m['server'].items()})}; {r['uptime_before']}"
            )
            speed.notes += [f"{r['backend']}: {e}" for e in m["errors"]]
        k = r.get("kill")
        if k:
            kills.add(
                r["backend"], f"{k['correct_once']}/{k['runs']}", k["lost"], len(k["seen_twice"]),
                k["broken_runs"], k["resent"], k["recover_p50_s"], k["recover_max_s"],
                f"{k['tool_executions']}/{k['calls_expected']}", k["calls_run_twice"],
                k["histories_not_once"],
            )  # fmt: skip
            detail = {x: k[x] for x in _KILL_DETAIL}
            kills.notes.append(f"{r['backend']}: {json.dumps(detail)}")
    return [speed, kills]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.many_workers", description=__doc__)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=40)
    parser.add_argument("--delay-ms", type=float, default=25.0)
    parser.add_argument("--lost-after", type=float, default=5.0)
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--passes", default="measure,kill")
    parser.add_argument("--json", default=None, help="also write the raw results here")
    args = parser.parse_args(argv)
    env = {"MOCK_CHUNKS": str(args.chunks), "MOCK_DELAY_MS": str(args.delay_ms)}
    results = []
    with mock_server(env=env) as url, tempfile.TemporaryDirectory(prefix="rxreact-mw-") as tmp:
        for name in args.backends.split(","):
            t0 = time.monotonic()
            result = run_backend(
                name, url, Path(tmp), runs=args.runs, concurrency=args.concurrency,
                workers=args.workers, chunks=args.chunks, lost_after=args.lost_after,
                passes=tuple(args.passes.split(",")),
            )  # fmt: skip
            print(f"{name}: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
            results.append(result)
    for table in tables(results, args):
        print(table.render())
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
