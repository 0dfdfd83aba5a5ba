"""redis-py for the Redis backends (chat memory, event log): imported on first use, so that
``rxreact`` works without the ``redis`` extra, and one client from a URL or the caller's,
a plain ``redis.Redis`` or a ``redis.cluster.RedisCluster``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, cast

from rxreact.errors import ConfigurationError

if TYPE_CHECKING:
    import redis
    from redis.cluster import RedisCluster

__all__ = [
    "RedisConnection",
    "close_redis",
    "connect_redis",
    "import_redis",
    "is_cluster",
    "redis_errors",
]


class RedisConnection(NamedTuple):
    """What a backend keeps: the module, the client, and whether closing it is the backend's."""

    module: Any
    client: redis.Redis
    """A ``redis.Redis``, or a ``redis.cluster.RedisCluster`` (see :func:`is_cluster`; typed
    as the first, whose commands the second has, for the backends written for one node)."""
    owned: bool
    """Made here from a URL (the backend closes it), not the caller's client (left open)."""


def import_redis(user: str) -> Any:
    """The ``redis`` module.

    Raises:
        ConfigurationError: redis-py is not installed (naming ``user`` and the extra).
    """
    try:
        import redis as module
    except ImportError as error:
        raise ConfigurationError(f"{user} needs redis-py: pip install 'rxreact[redis]'") from error
    return module


def connect_redis(
    client_or_url: redis.Redis | RedisCluster | str, user: str, *, cluster: bool = False
) -> RedisConnection:
    """``user``'s client: made from a URL (a ``RedisCluster`` from any node's URL with
    ``cluster=True``), or the one given.

    redis-py's cluster client connects (to learn the slots) when it is made, where the plain
    one waits for the first command: a cluster that cannot be reached fails here, with one of
    :func:`redis_errors` (the caller maps it to its own typed error).

    Raises:
        ConfigurationError: redis-py is not installed (naming ``user`` and the extra).
    """
    module = import_redis(user)
    if not isinstance(client_or_url, str):
        return RedisConnection(module, cast("redis.Redis", client_or_url), False)
    if cluster:
        from redis.cluster import RedisCluster

        made = RedisCluster.from_url(client_or_url)
        return RedisConnection(module, cast("redis.Redis", made), True)
    return RedisConnection(module, module.Redis.from_url(client_or_url), True)


def is_cluster(client: object) -> bool:
    """True for a ``redis.cluster.RedisCluster`` (redis-py is imported already: a client)."""
    from redis.cluster import RedisCluster

    return isinstance(client, RedisCluster)


def redis_errors(module: Any) -> tuple[type[Exception], ...]:
    """Every failure redis-py raises: its ``RedisError`` tree, and the cluster client's
    ``RedisClusterException`` (keys in two slots, no reachable node), which is not in it."""
    return (module.RedisError, module.exceptions.RedisClusterException)


def close_redis(client: Any) -> None:
    """Close a client this backend made, sockets included.

    ``RedisCluster.close`` closes each node's client, but those were given their pools, so
    their sockets stay open until garbage collection: the pools are disconnected here too.
    """
    client.close()
    if is_cluster(client):
        for node in client.get_nodes():
            if node.redis_connection is not None:
                node.redis_connection.connection_pool.disconnect()
