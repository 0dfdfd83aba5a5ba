"""A real ``redis-server`` on a free loopback port, for the Redis chat-memory tests.

The Redis tests run against the real server, never a fake: a fake would agree with whatever
we believe MULTI/EXEC, LTRIM and PEXPIRE do. Where ``redis-server`` (or redis-py) is missing
the tests skip, unless ``RXREACT_REQUIRE_REDIS=1`` (CI sets it), where they fail: a CI that
silently skipped them would pass without testing the backend at all.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import pytest

REQUIRE_ENV = "RXREACT_REQUIRE_REDIS"


def unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it where the environment requires Redis."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_ENV}=1 requires the Redis tests to run")
    pytest.skip(f"{reason} (set {REQUIRE_ENV}=1 to make this a failure)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One ``redis-server`` process listening on 127.0.0.1 only, with no persistence, or with
    an append-only file written at every command (``persistent``: a restart keeps the data, as
    a production Redis does)."""

    def __init__(self, executable: str, workdir: Path, persistent: bool = False) -> None:
        self.port = free_port()
        self._executable = executable
        self._workdir = workdir
        self._persistent = persistent
        self._log = workdir / f"redis-{self.port}.log"
        self.process = self._start()

    def _arguments(self) -> list[str]:
        return [
            *(self._executable, "--port", str(self.port), "--bind", "127.0.0.1"),
            *("--save", "", "--dir", str(self._workdir)),
            *(("--appendonly", "yes", "--appendfsync", "always") if self._persistent else ()),
            *(() if self._persistent else ("--appendonly", "no")),
        ]

    def _start(self) -> subprocess.Popen[bytes]:
        with self._log.open("ab") as log:
            return subprocess.Popen(
                self._arguments(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def restart(self) -> bool:
        """Start the stopped server again on its port (empty unless ``persistent``)."""
        self.process = self._start()
        return self.wait_ready()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def wait_ready(self, timeout: float = 10.0) -> bool:
        """PING until PONG, the process exits, or the deadline passes.

        Between attempts the loop waits on the process itself (a few milliseconds), so a
        server that dies at start (its port was taken meanwhile) ends the wait at once.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _pong(self.port):
                return True
            try:
                self.process.wait(timeout=0.005)
                return False  # it exited
            except subprocess.TimeoutExpired:
                pass
        return False

    def log(self) -> str:
        return self._log.read_text(errors="replace")

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def redis_executable(name: str = "redis-server") -> str:
    """The path of ``name`` with redis-py importable; skips (or fails) without either."""
    executable = shutil.which(name)
    if executable is None:
        unavailable(f"{name} is not on PATH (apt-get install redis-server)")
    try:
        import redis  # noqa: F401
    except ImportError:
        unavailable("redis-py is not installed (pip install 'rxreact[redis]')")
    return executable


@contextmanager
def running_redis_server(persistent: bool = False) -> Iterator[RedisServer]:
    """A started server, stopped on exit; skips (or fails, see the module doc) without one."""
    executable = redis_executable()
    with tempfile.TemporaryDirectory(prefix="rxreact-redis-") as workdir:
        for _attempt in range(3):  # another process may take the free port before redis does
            server = RedisServer(executable, Path(workdir), persistent)
            try:
                if server.wait_ready():
                    yield server
                    return
                log = server.log()
            finally:
                server.stop()
        pytest.fail(f"redis-server did not start:\n{log}")
