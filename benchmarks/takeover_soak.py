"""``python -m benchmarks.takeover_soak``: runs whose workers are killed (SIGKILL) at random
points, resumed by other workers, on a SQLite file or a real Redis.

Each run is started by a worker process (a ``ReactAgent`` with a durable log and a
``runs_keeper``) and followed from this process. At a random point (a round starting, the
answer streaming, a model response finished, a call waiting for approval, a tool running, a
tool result recorded, or never) the worker is killed with SIGKILL and another is started;
with ``--second-kill`` the resuming worker is killed too, once, and a third one finishes the
run. ``charge`` needs approval: this process decides it (``event_log.decide``) when it sees
the request, or, when the kill is at the request, only after the kill, while no worker holds
the run (parked, if the park was written before the kill). Every run must:

- end exactly once, with the expected answer, within ``--bound`` seconds;
- have shown its follower consecutive ``seq`` from 1 to a last ``final_answer``, with one
  ``tool_result`` per call;
- have run the non-idempotent ``charge`` tool at most once (counted in a file per run id by
  whichever process ran it: with ``--concurrency`` above 1, a worker started for one run may
  as well resume another's).

``python -m benchmarks.takeover_soak --log sqlite --runs 100`` (or ``--log redis://...``);
``--concurrency N`` keeps N runs (and their workers) going at once.
Exit status 1 on any violation. ``tests/test_takeover_soak.py`` runs a few of each.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from rxreact import (
    OpenAIChatModel,
    ReactAgent,
    RedisEventLog,
    RunContext,
    SQLiteEventLog,
    follow,
    tool,
)
from rxreact.errors import RxReactError
from rxreact.messages import ChatRequest
from rxreact.model.scripted.replies import Reply, text_reply, tool_call_reply
from rxreact.testing import MockOpenAIServer

ANSWER = "Charged five, and Paris is sunny with a light breeze all afternoon."
POINTS = (
    "round_started",
    "text_delta",
    "round_finished",
    "tool_approval_requested",
    "tool_execution_started",
    "tool_result",
    "never",
)


def script(request: ChatRequest) -> Reply:
    """A tool round, then the answer, paced so that kills land inside each step."""
    if not any(m.role == "tool" for m in request.messages):
        return tool_call_reply(
            ("charge", {"amount": 5}), ("lookup", {"city": "Paris"}), interval=0.005
        )
    return text_reply(ANSWER, size=4, interval=0.01)


def open_log(where: str, **options: Any) -> SQLiteEventLog | RedisEventLog:
    if where.startswith("redis://"):
        return RedisEventLog(where, **options)
    return SQLiteEventLog(where, **options)


# -- the worker process ---------------------------------------------------------------------


def worker(where: str, model_url: str, directory: str, lost_after: float, start: bool) -> None:
    counts = Path(directory)
    pace = random.Random(os.getpid())

    def count(name: str, run_id: str) -> None:
        with open(counts / f"{name}-{run_id}", "a") as calls:
            calls.write(f"{os.getpid()}\n")

    @tool(requires_approval=True)
    def charge(ctx: RunContext[None], amount: int) -> str:
        """Charges the card (not safe to run twice; a person approves it first)."""
        count("charge", ctx.run_id)
        threading.Event().wait(pace.uniform(0.0, 0.3))
        return f"charged {amount}"

    @tool(idempotent=True)
    def lookup(ctx: RunContext[None], city: str) -> str:
        """Looks the weather up."""
        threading.Event().wait(pace.uniform(0.0, 0.3))
        count("lookup", ctx.run_id)
        return f"{city}: sunny"

    log = open_log(where, lost_after=lost_after)
    model = OpenAIChatModel("mock", base_url=model_url, api_key="sk-soak", max_retries=0)
    agent = ReactAgent(model, [charge, lookup], event_log=log)
    with agent.runs_keeper(interval=lost_after / 3):
        if start:
            print(agent.start("Charge 5 and look Paris up.").id, flush=True)
        else:
            print("keeping", flush=True)
        threading.Event().wait(600)  # until killed


# -- the soak -------------------------------------------------------------------------------


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.violations: list[str] = []
        self.kills = 0
        self.completed = 0
        self._lock = threading.Lock()  # runs go on in threads with --concurrency

    def _killed(self) -> None:
        with self._lock:
            self.kills += 1

    def spawn(self, where: str, model_url: str, directory: str, start: bool) -> Any:
        command = [
            sys.executable,
            "-m",
            "benchmarks.takeover_soak",
            "--worker",
            where,
            model_url,
            directory,
            str(self.args.lost_after),
        ]
        process = subprocess.Popen(
            command + (["--start"] if start else []),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert process.stdout is not None
        return process, process.stdout.readline().strip()

    def one(self, number: int, where: str, model_url: str, root: Path) -> None:
        directory = root / "counts"
        directory.mkdir(exist_ok=True)
        randomly = random.Random(f"{self.args.seed}-{number}")  # the same run for a seed
        workers: list[Any] = []
        first, run_id = self.spawn(where, model_url, str(directory), start=True)
        workers.append(first)
        point = randomly.choice(POINTS)
        seen: list[Any] = []
        done = threading.Event()
        reached = threading.Event()
        failure: list[Exception] = []
        asked: list[str] = []
        may_decide = threading.Event()  # at once, or (kill at the request) once it is killed
        if point != "tool_approval_requested":
            may_decide.set()

        def on_next(event: Any) -> None:
            seen.append(event)
            if event.type == point:
                reached.set()
            if event.type == "tool_approval_requested" and not asked:
                asked.append(event.call_id)
                threading.Thread(target=decide, args=(event.call_id,), daemon=True).start()

        def decide(call_id: str) -> None:
            if not may_decide.wait(self.args.bound):
                return
            # Refused when settled meanwhile (resumed from before the park: may have run).
            with contextlib.suppress(RxReactError):
                log.decide(run_id, call_id, True)

        def on_error(error: Exception) -> None:
            failure.append(error)
            done.set()

        with open_log(where, lost_after=self.args.lost_after, takeover_timeout=30) as log:
            subscription = follow(run_id, log).subscribe(on_next, on_error, done.set)
            try:
                if point != "never" and reached.wait(self.args.bound):
                    first.kill()
                    first.wait(timeout=10)
                    self._killed()
                    may_decide.set()  # decided while no worker holds the run
                    second, _ = self.spawn(where, model_url, str(directory), start=False)
                    workers.append(second)
                    if randomly.random() < self.args.second_kill:
                        again = len(seen) + randomly.randint(1, 20)
                        tick = threading.Event()
                        deadline = time.monotonic() + self.args.bound
                        while len(seen) < again and not done.is_set():
                            if time.monotonic() > deadline:
                                break
                            tick.wait(0.01)
                        if not done.is_set():
                            second.kill()
                            self._killed()
                            third, _ = self.spawn(where, model_url, str(directory), start=False)
                            workers.append(third)
                if not done.wait(self.args.bound):
                    self.violations.append(f"run {number} ({point}): did not end")
            finally:
                subscription.dispose()
                for process in workers:
                    process.kill()
                    process.communicate(timeout=10)
        self.check(number, point, seen, failure, directory / f"charge-{run_id}")

    def check(
        self, number: int, point: str, seen: list[Any], failure: list[Exception], charge: Path
    ) -> None:
        name = f"run {number} ({point})"
        if failure:
            self.violations.append(f"{name}: {type(failure[0]).__name__}: {failure[0]}")
            return
        seqs = [e.seq for e in seen]
        if seqs != list(range(1, len(seqs) + 1)):
            self.violations.append(f"{name}: seq not consecutive: {seqs}")
        finals = [e for e in seen if e.type == "final_answer"]
        if len(finals) != 1 or seen[-1] is not finals[0] or finals[0].text != ANSWER:
            self.violations.append(f"{name}: not one final answer at the end")
        results = [e.call_id for e in seen if e.type == "tool_result"]
        if sorted(results) != ["call_0", "call_1"]:
            self.violations.append(f"{name}: tool results {results}")
        charged = len(charge.read_text().splitlines()) if charge.exists() else 0
        if charged > 1:
            self.violations.append(f"{name}: charge ran {charged} times")
        with self._lock:
            self.completed += not failure and len(finals) == 1

    def main(self) -> int:
        args = self.args
        with MockOpenAIServer(script) as server, tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            where = args.log if args.log != "sqlite" else str(root / "runs.db")
            if where.startswith("redis://"):
                import redis

                with redis.Redis.from_url(where) as client:
                    client.flushdb()
            started = time.monotonic()
            with ThreadPoolExecutor(max(1, args.concurrency)) as runs:
                for _ in runs.map(
                    lambda number: self.one(number, where, server.base_url, root),
                    range(args.runs),
                ):
                    pass
            elapsed = time.monotonic() - started
        print(
            f"log: {args.log}  runs: {args.runs} ({args.concurrency} at once)  "
            f"kills: {self.kills}  "
            f"completed: {self.completed}  in {elapsed:.1f} s"
        )
        print(f"violations: {len(self.violations)}")
        for violation in self.violations:
            print("  " + violation)
        return 1 if self.violations else 0


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log", default="sqlite", help="sqlite, or a redis:// URL")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--lost-after", type=float, default=0.6)
    parser.add_argument(
        "--second-kill",
        type=float,
        default=0.3,
        help="share of resumed runs whose resuming worker is killed too",
    )
    parser.add_argument("--bound", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=1, help="runs going on at once")
    return parser.parse_args(argv)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        where, model_url, directory, lost_after = sys.argv[2:6]
        worker(where, model_url, directory, float(lost_after), "--start" in sys.argv[6:])
    else:
        sys.exit(Soak(parse(sys.argv[1:])).main())
