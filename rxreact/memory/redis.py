"""A chat memory in Redis: one history shared by many processes and machines."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from rxreact.errors import ChatMemoryError, ConfigurationError
from rxreact.memory._turns import decode_turns, encode_turn
from rxreact.messages import Message

if TYPE_CHECKING:
    import redis

__all__ = ["RedisChatMemory"]

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")


def _import_redis() -> Any:
    """redis-py, imported on first use so that ``rxreact.memory`` works without it."""
    try:
        import redis
    except ImportError as error:
        raise ConfigurationError(
            "RedisChatMemory needs redis-py: pip install 'rxreact[redis]'"
        ) from error
    return redis


class RedisChatMemory:
    """Histories in Redis lists, one element per turn; optionally trimmed to the last ``max_turns``.

    A conversation is the list at ``{prefix}turns:{conversation_id}``; each element is one whole
    turn (the messages of one :meth:`append`, as JSON), so trimming drops whole elements and an
    assistant tool-call message can never be separated from its tool results. ``append`` sends
    RPUSH, LTRIM and EXPIRE in one MULTI/EXEC transaction: another client sees the turn with its
    trimming, or neither, and turns appended at once from anywhere never interleave.

    Args:
        client_or_url: a ``redis.Redis`` client (left open by :meth:`close`; its owner closes
            it) or a URL such as ``redis://localhost:6379/0`` (the client made from it is
            closed by :meth:`close`).
        prefix: the start of every key this memory writes, to share a database with others.
        max_turns: keep only the last this many turns of each conversation.
        ttl: forget a conversation this long after its last turn (seconds or a timedelta);
            ``None`` keeps it until cleared.

    Raises:
        ConfigurationError: redis-py is not installed (``pip install 'rxreact[redis]'``).
    """

    def __init__(
        self,
        client_or_url: redis.Redis | str,
        *,
        prefix: str = "rxreact:",
        max_turns: int | None = None,
        ttl: float | timedelta | None = None,
    ) -> None:
        if max_turns is not None and max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
        if seconds is not None and seconds <= 0:
            raise ValueError("ttl must be positive")
        module = _import_redis()
        self._error: type[Exception] = module.RedisError
        self._owns_client = isinstance(client_or_url, str)
        self._client: redis.Redis = (
            module.Redis.from_url(client_or_url)
            if isinstance(client_or_url, str)
            else client_or_url
        )
        self.prefix = prefix
        self._max_turns = max_turns
        self._ttl_ms = None if seconds is None else max(1, round(seconds * 1000))

    def _key(self, conversation_id: str) -> str:
        return f"{self.prefix}turns:{conversation_id}"

    @contextmanager
    def _guard(self, action: str) -> Iterator[redis.Redis]:
        """The client; every redis-py failure becomes a ChatMemoryError with it as the cause."""
        try:
            yield self._client
        # A key redis-py cannot encode (a lone surrogate in a conversation id) is ours too.
        except (self._error, UnicodeEncodeError) as error:
            raise ChatMemoryError(f"Redis chat memory: could not {action}: {error}") from error

    def load(self, conversation_id: str) -> list[Message]:
        """The conversation's messages, oldest first (empty for an unknown id)."""
        with self._guard("load the conversation") as client:
            turns: list[bytes | str] = client.lrange(self._key(conversation_id), 0, -1)
        return decode_turns(enumerate(turns), "Redis chat memory", conversation_id)

    def append(self, conversation_id: str, messages: Sequence[Message]) -> None:
        """Add a turn (one list element), trim and refresh the ttl, in one transaction."""
        if not messages:
            return
        key = self._key(conversation_id)
        data = encode_turn(messages)
        with self._guard("store the turn") as client, client.pipeline(transaction=True) as pipe:
            pipe.rpush(key, data)
            if self._max_turns is not None:
                pipe.ltrim(key, -self._max_turns, -1)
            if self._ttl_ms is not None:
                pipe.pexpire(key, self._ttl_ms)
            pipe.execute()

    def _keys(self, client: redis.Redis) -> Iterator[bytes | str]:
        pattern = _GLOB_SPECIAL.sub(r"\\\1", self._key("")) + "*"
        return client.scan_iter(match=pattern, count=500)

    def conversation_ids(self) -> list[str]:
        """The ids with a stored history under this prefix, sorted."""
        start = len(self._key("").encode())
        with self._guard("list conversations") as client:
            keys = [k if isinstance(k, bytes) else k.encode() for k in self._keys(client)]
        return sorted(k[start:].decode() for k in keys)

    def clear(self, conversation_id: str | None = None) -> None:
        """Forget one conversation, or all under this prefix (key by key: not one transaction)."""
        with self._guard("clear") as client:
            if conversation_id is not None:
                client.delete(self._key(conversation_id))
                return
            batch: list[bytes | str] = []
            for key in self._keys(client):
                batch.append(key)
                if len(batch) == 500:
                    client.delete(*batch)
                    batch.clear()
            if batch:
                client.delete(*batch)

    def close(self) -> None:
        """Close the client if this memory made it from a URL."""
        if self._owns_client:
            with self._guard("close"):
                self._client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
