"""A real three-master Redis Cluster on loopback ports, for the Redis Cluster tests.

Three ``redis-server --cluster-enabled yes`` processes in a temporary directory, joined by
``redis-cli --cluster create`` (no replicas), ready once ``CLUSTER INFO`` says
``cluster_state:ok`` on every node. Each node's cluster-bus port is picked free too (Redis 7's
``--cluster-port``) rather than the default port + 10000, which may be taken or past 65535.
Skips, or fails with ``RXREACT_REQUIRE_REDIS=1``, as :mod:`redis_server` does.
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from redis_server import RedisServer, free_port, redis_executable

#: Masters in the test cluster: the fewest ``redis-cli --cluster create`` accepts.
NODES = 3
#: Seconds for the nodes to start, meet and agree that every slot is served.
READY_TIMEOUT = 30.0


class ClusterNode(RedisServer):
    """One cluster-enabled ``redis-server``: its own config file and a free bus port."""

    def __init__(self, executable: str, workdir: Path) -> None:
        self.bus_port = free_port()
        super().__init__(executable, workdir)

    def _arguments(self) -> list[str]:
        return [
            *super()._arguments(),
            *("--cluster-enabled", "yes", "--cluster-port", str(self.bus_port)),
            *("--cluster-config-file", f"nodes-{self.port}.conf"),
            *("--cluster-node-timeout", "5000"),
        ]

    def stop(self) -> None:
        """SIGKILL: nothing is persisted, and a cluster node's orderly shutdown takes seconds."""
        self.process.kill()
        self.process.wait()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def cluster_state_ok(self) -> bool:
        import redis

        try:
            with redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=2) as client:
                info = client.execute_command("CLUSTER INFO")
        except redis.RedisError:
            return False
        if isinstance(info, dict):  # redis-py parses the reply into its fields
            return info.get("cluster_state") in ("ok", b"ok")
        text = info.decode() if isinstance(info, bytes) else str(info)
        return "cluster_state:ok" in text


class LocalCluster:
    """The started nodes; :attr:`url` is one node's URL, enough for a cluster client."""

    def __init__(self, nodes: list[ClusterNode]) -> None:
        self.nodes = nodes

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.nodes[0].port}/0"

    def client(self) -> object:
        """A new ``redis.cluster.RedisCluster`` on the cluster (the caller closes it with
        ``rxreact._redis.close_redis``: its own ``close`` leaves the sockets open)."""
        from redis.cluster import RedisCluster as Client

        return Client.from_url(self.url)

    def flush(self) -> None:
        """Empty every master: each test starts from an empty cluster."""
        import redis

        for node in self.nodes:
            with redis.Redis(host="127.0.0.1", port=node.port) as client:
                client.flushall()

    def log(self) -> str:
        return "\n".join(f"--- {node.address}\n{node.log()}" for node in self.nodes)

    def wait_ok(self, deadline: float) -> bool:
        """Until every node reports ``cluster_state:ok``; False once a node died or at the
        deadline. Between rounds the loop waits on the first node's process (a few ms)."""
        while time.monotonic() < deadline:
            if all(node.cluster_state_ok() for node in self.nodes):
                return True
            if any(node.process.poll() is not None for node in self.nodes):
                return False
            try:
                self.nodes[0].process.wait(timeout=0.02)
                return False  # it exited
            except subprocess.TimeoutExpired:
                pass
        return False


def _create(cli: str, cluster: LocalCluster, deadline: float) -> str | None:
    """Join the nodes into one cluster; None when done, else why not."""
    addresses = [node.address for node in cluster.nodes]
    try:
        created = subprocess.run(
            [cli, "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=max(1.0, deadline - time.monotonic()),
        )
    except subprocess.TimeoutExpired as error:
        return f"redis-cli --cluster create timed out: {error.stdout!r}"
    if created.returncode != 0:
        return f"redis-cli --cluster create failed:\n{created.stdout}\n{created.stderr}"
    return None


@contextmanager
def running_redis_cluster() -> Iterator[LocalCluster]:
    """A started three-master cluster, its processes stopped on exit whatever happens; skips
    (or fails, see :mod:`redis_server`) without redis-server, redis-cli or redis-py."""
    server = redis_executable("redis-server")
    cli = redis_executable("redis-cli")
    failure = ""
    for _attempt in range(3):  # another process may take a free port before redis does
        with tempfile.TemporaryDirectory(prefix="rxreact-cluster-") as workdir, ExitStack() as stop:
            nodes: list[ClusterNode] = []
            for _ in range(NODES):
                node = ClusterNode(server, Path(workdir))
                stop.callback(node.stop)
                nodes.append(node)
            cluster = LocalCluster(nodes)
            deadline = time.monotonic() + READY_TIMEOUT
            if not all(node.wait_ready(max(0.1, deadline - time.monotonic())) for node in nodes):
                failure = f"a cluster node did not start:\n{cluster.log()}"
                continue
            why = _create(cli, cluster, deadline)
            if why is not None:
                failure = f"{why}\n{cluster.log()}"
                continue
            if not cluster.wait_ok(deadline):
                failure = f"the cluster never reported cluster_state:ok:\n{cluster.log()}"
                continue
            yield cluster
            return
    pytest.fail(f"no Redis Cluster:\n{failure}")
