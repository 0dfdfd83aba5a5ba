"""The many-workers benchmark's processes: ``rxreact serve`` workers on one database, each a
process of its own on a port of its own (``python -m benchmarks._serve_worker``).

Four processes rather than ``rxreact serve --workers 4`` for every backend: SQLite has no
``--workers`` (it shares runs only between processes that open the same file), and a
process per port lets the driver kill one chosen worker with SIGKILL and send the rest its
requests, as a load balancer that saw the worker go would.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks._harness import ROOT, BenchError
from benchmarks._serve_worker import COUNTS_ENV, TOOL_LOG_ENV

_LISTENING = re.compile(r"listening on (http://\S+)")
START_TIMEOUT_S = 120.0


class Worker:
    """One ``rxreact serve`` process; :attr:`url` once it listens."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks._serve_worker", "--port", "0", *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.url = ""
        self._listening = threading.Event()
        # uvicorn logs every request to stderr: drained into a file, or the pipe fills up and
        # the worker blocks on its next log line.
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        with self.log_path.open("w") as log:
            for line in self.process.stderr:
                log.write(line)
                found = _LISTENING.search(line)
                if found and not self.url:
                    self.url = found[1]
                    self._listening.set()
        self.process.stderr.close()
        self._listening.set()  # exited without listening: wait_listening reports it

    def wait_listening(self) -> None:
        if not self._listening.wait(START_TIMEOUT_S) or not self.url:
            raise BenchError(f"a worker did not start:\n{self.log_tail()}")

    def log_tail(self, chars: int = 3000) -> str:
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> str:
        """SIGKILL: no shutdown, no last write; the worker's URL."""
        self.process.kill()
        self.process.wait(10)
        self._drainer.join(10)
        return self.url

    def stop(self) -> None:
        if self.alive:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._drainer.join(10)


class Fleet:
    """``n`` workers on the same ``serve_args``, the tool log and the count files in ``workdir``."""

    def __init__(self, n: int, serve_args: list[str], workdir: Path, tag: str) -> None:
        self.tool_log = workdir / f"tools-{tag}.log"
        self.counts_dir = workdir / f"counts-{tag}"
        self.counts_dir.mkdir(exist_ok=True)
        env = {**os.environ, TOOL_LOG_ENV: str(self.tool_log), COUNTS_ENV: str(self.counts_dir)}
        self.workers = [
            Worker(serve_args, env, workdir / f"worker-{tag}-{i}.log") for i in range(n)
        ]
        try:
            for worker in self.workers:
                worker.wait_listening()
        except BaseException:
            self.stop()
            raise

    @property
    def urls(self) -> list[str]:
        return [worker.url for worker in self.workers]

    def counts(self) -> dict[str, float]:
        """Every live worker's round trips so far, summed (each writes its own on SIGUSR1)."""
        live = [w for w in self.workers if w.alive]
        for old in self.counts_dir.glob("*.json"):
            old.unlink()
        for worker in live:
            worker.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 30
        files = [self.counts_dir / f"{w.process.pid}.json" for w in live]
        while not all(f.exists() for f in files):  # the bench's own wait, not a test's
            if time.monotonic() > deadline:
                raise BenchError("workers did not write their round-trip counts")
            time.sleep(0.01)
        total: dict[str, float] = {}
        for path in files:
            for key, value in json.loads(path.read_text()).items():
                total[key] = total.get(key, 0) + value
        return total

    def cpu_s(self) -> float:
        """The live workers' CPU time so far (user + system, from ``/proc``)."""
        total = 0.0
        for worker in self.workers:
            if worker.alive:
                with open(f"/proc/{worker.process.pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def tool_calls(self) -> list[tuple[str, str, str, str]]:
        """``(run_id, round, city, pid)`` of every tool execution so far."""
        if not self.tool_log.exists():
            return []
        lines = self.tool_log.read_text().splitlines()
        return [(a, b, c, d) for a, b, c, d in (line.split(" ") for line in lines)]

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
