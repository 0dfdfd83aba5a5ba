"""redis-py for the Redis backends (chat memory, event log): imported on first use, so that
``rxreact`` works without the ``redis`` extra, and one client from a URL or the caller's."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from rxreact.errors import ConfigurationError

if TYPE_CHECKING:
    import redis

__all__ = ["RedisConnection", "connect_redis"]


class RedisConnection(NamedTuple):
    """What a backend keeps: the module, the client, and whether closing it is the backend's."""

    module: Any
    client: redis.Redis
    owned: bool
    """Made here from a URL (the backend closes it), not the caller's client (left open)."""


def connect_redis(client_or_url: redis.Redis | str, user: str) -> RedisConnection:
    """``user``'s client: made from a URL, or the one given.

    Raises:
        ConfigurationError: redis-py is not installed (naming ``user`` and the extra).
    """
    try:
        import redis as module
    except ImportError as error:
        raise ConfigurationError(f"{user} needs redis-py: pip install 'rxreact[redis]'") from error
    if isinstance(client_or_url, str):
        return RedisConnection(module, module.Redis.from_url(client_or_url), True)
    return RedisConnection(module, client_or_url, False)
