"""A real PostgreSQL 15 server, and PgBouncer in transaction mode in front of it, on free
loopback ports: one pair per test session, for the Postgres backends' tests.

The cluster is made by ``initdb`` in a temporary directory (trust authentication, listening on
127.0.0.1 and a unix socket inside that directory only) and started without fsync: the tests
check behaviour, not durability on power loss. PostgreSQL and PgBouncer refuse to run as
root, so as root both run as the ``postgres`` system user (made by Debian's package).

Every test shares one database and takes table names of its own
(:meth:`PostgresServer.new_prefix`, the backends' ``table_prefix``), so tests never see each
other's rows (a ``CREATE DATABASE`` per test would cost a second or more on a busy machine).
Where the binaries (or psycopg) are missing the tests skip, unless
``RXREACT_REQUIRE_POSTGRES=1`` (CI sets it), where they fail.
"""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, NoReturn

import pytest
from redis_server import free_port

REQUIRE_ENV = "RXREACT_REQUIRE_POSTGRES"
BIN = Path(os.environ.get("RXREACT_POSTGRES_BIN", "/usr/lib/postgresql/15/bin"))
USER = "rxreact"
DATABASE = "rxreact_test"
_names = itertools.count(1)


def unavailable(reason: str) -> NoReturn:
    """Skip the test, or fail it where the environment requires Postgres."""
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_ENV}=1 requires the Postgres tests to run")
    pytest.skip(f"{reason} (set {REQUIRE_ENV}=1 to make this a failure)")


def _as_service_user(workdir: Path) -> list[str]:
    """The command prefix that runs a server as a non-root user (nothing when not root)."""
    if os.geteuid() != 0:
        return []
    try:
        account = pwd.getpwnam("postgres")
    except KeyError:
        unavailable("running as root and there is no 'postgres' user to run the server as")
    os.chown(workdir, account.pw_uid, account.pw_gid)
    return ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups"]


class PostgresServer:
    """One ``postgres`` cluster and one ``pgbouncer`` (transaction pooling) in front of it."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._as = _as_service_user(workdir)
        self.port = free_port()
        self.bouncer_port = free_port()
        self.data = workdir / "data"
        self.postgres: subprocess.Popen[bytes] | None = None
        self.bouncer: subprocess.Popen[bytes] | None = None
        self._initdb()

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self._as, *args], capture_output=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            pytest.fail(f"{args[0]} failed: {done.stdout.decode()}{done.stderr.decode()}")

    def _initdb(self) -> None:
        self._run(
            str(BIN / "initdb"),
            *("-D", str(self.data), "-U", USER, "-A", "trust", "-E", "UTF8", "--no-sync"),
        )

    def start(self) -> None:
        """Start (or start again) the server, then the pooler, and wait until both answer."""
        with (self.workdir / "postgres.log").open("ab") as log:
            self.postgres = self._spawn(log)
        if not self._wait_ready(self.port):
            pytest.fail(f"postgres did not start:\n{self.log()}")
        self._create_database()
        if self.bouncer is None or self.bouncer.poll() is not None:
            self._start_bouncer()

    def _create_database(self) -> None:
        import psycopg

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone():
                return
            conn.execute(f"CREATE DATABASE {DATABASE}")

    def _spawn(self, log: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                *self._as,
                str(BIN / "postgres"),
                *("-D", str(self.data), "-p", str(self.port), "-k", str(self.workdir)),
                *("-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"),
                *("-c", "synchronous_commit=off", "-c", "full_page_writes=off"),
                *("-c", "max_connections=200", "-c", "shared_buffers=32MB"),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )

    def _start_bouncer(self) -> None:
        pgbouncer = shutil.which("pgbouncer")
        if pgbouncer is None:
            return
        (self.workdir / "users.txt").write_text(f'"{USER}" ""\n')
        config = self.workdir / "pgbouncer.ini"
        config.write_text(
            "[databases]\n"
            f"* = host=127.0.0.1 port={self.port}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {self.bouncer_port}\n"
            "unix_socket_dir =\nauth_type = trust\n"
            f"auth_file = {self.workdir / 'users.txt'}\n"
            "pool_mode = transaction\ndefault_pool_size = 20\nmax_client_conn = 500\n"
            "server_reset_query =\nignore_startup_parameters = extra_float_digits\n"
            "server_login_retry = 1\n"
        )
        if self._as:
            os.chown(config, *_owner(self.workdir))
        with (self.workdir / "pgbouncer.log").open("ab") as log:
            self.bouncer = subprocess.Popen(
                [*self._as, pgbouncer, str(config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        if not self._wait_ready(self.bouncer_port, self.bouncer):
            pytest.fail(f"pgbouncer did not start:\n{self.log('pgbouncer.log')}")

    def _wait_ready(self, port: int, process: subprocess.Popen[bytes] | None = None) -> bool:
        import psycopg

        process = process or self.postgres
        assert process is not None
        for _ in range(400):
            try:
                with psycopg.connect(
                    f"host=127.0.0.1 port={port} user={USER} dbname=postgres connect_timeout=2"
                ) as conn:
                    conn.execute("SELECT 1")
                return True
            except psycopg.OperationalError:
                pass
            try:
                process.wait(timeout=0.025)  # waits on the process, so a dead one ends it
                return False
            except subprocess.TimeoutExpired:
                pass
        return False

    def dsn(self, database: str = DATABASE, *, bouncer: bool = False) -> str:
        """A direct connection's DSN, or PgBouncer's (skips, or fails, without pgbouncer)."""
        if bouncer and self.bouncer is None:
            unavailable("pgbouncer is not on PATH (apt-get install pgbouncer)")
        port = self.bouncer_port if bouncer else self.port
        return f"postgresql://{USER}@127.0.0.1:{port}/{database}"

    @property
    def has_bouncer(self) -> bool:
        return self.bouncer is not None

    def new_database(self) -> str:
        """A new empty database (for a program whose table names are its defaults); its name."""
        import psycopg

        name = f"db{os.getpid()}_{next(_names)}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def new_prefix(self) -> str:
        """A table prefix no test used before: the tables a test makes are its own."""
        return f"t{next(_names)}_"

    def stop_postgres(self) -> None:
        """Stop the server now (fast shutdown: clients are disconnected)."""
        if self.postgres is not None and self.postgres.poll() is None:
            self.postgres.send_signal(signal.SIGINT)
            self.postgres.wait(timeout=30)

    def log(self, name: str = "postgres.log") -> str:
        path = self.workdir / name
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        for process in (self.bouncer, self.postgres):
            if process is not None and process.poll() is None:
                process.send_signal(signal.SIGINT)  # postgres: fast shutdown, clients cut off
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _owner(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_uid, info.st_gid


@contextmanager
def running_postgres_server() -> Iterator[PostgresServer]:
    """A started server (and pooler, where pgbouncer is installed), stopped on exit."""
    if not (BIN / "initdb").exists():
        unavailable(f"PostgreSQL is not installed in {BIN} (apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        unavailable("psycopg is not installed (pip install 'rxreact[postgres]')")
    with tempfile.TemporaryDirectory(prefix="rxreact-pg-") as workdir:
        server = PostgresServer(Path(workdir))
        try:
            server.start()
            yield server
        finally:
            server.stop()


_shared: list[PostgresServer] = []
_shared_stack = ExitStack()


def shared_postgres_server() -> PostgresServer:
    """The process's one server, started on first use and stopped when the process exits:
    the test session's fixture and the docs' examples share it (each start costs seconds)."""
    if not _shared:
        _shared.append(_shared_stack.enter_context(running_postgres_server()))
        atexit.register(_shared_stack.close)
    return _shared[0]
