"""A chat memory in Redis: one history shared by many processes and machines."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from reactivex import Observable

from rxreact._closeable import Closeable
from rxreact._redis import connect_redis
from rxreact.errors import ChatMemoryError
from rxreact.memory._redis_releases import ReleaseNotices
from rxreact.memory._turns import decode_turns, encode_turn
from rxreact.memory.lease import Lease, lease_lost
from rxreact.messages import Message

if TYPE_CHECKING:
    import redis

__all__ = ["RedisChatMemory"]

_GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")

# The lease key holds "<token>:<owner>" with a PX expiry; the fence key counts grants, so
# tokens only grow. With a conversation ttl (ARGV[3] ms, 0: none) the fence key expires with
# the conversation: a later restart at 1 cannot confuse anyone, since every lease that could
# compare against it expired long before and the owner is part of the value compared.
# Each script is one atomic step on the server.
_ACQUIRE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return false end
local token = redis.call('INCR', KEYS[2])
if tonumber(ARGV[3]) > 0 then
    redis.call('PEXPIRE', KEYS[2], math.max(tonumber(ARGV[3]), tonumber(ARGV[2])))
end
redis.call('SET', KEYS[1], token .. ':' .. ARGV[1], 'PX', ARGV[2])
return token
"""
_RENEW = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
# KEYS: lease, fence; ARGV: old lease value, old token, new owner, ttl ms, conversation ttl ms.
# The old lease is the latest grant while the fence still counts its token and the lease key,
# if it has not expired, still holds it. A fence key that expired with the conversation while
# the lease was renewed for longer (a parked run) is proven by the live lease key alone. The
# new token is set rather than INCR'd so that case continues the count too.
_HAND_OVER = """
local fence = redis.call('GET', KEYS[2])
local held = redis.call('GET', KEYS[1])
if fence and fence ~= ARGV[2] then return false end
if held and held ~= ARGV[1] then return false end
if not fence and not held then return false end
local token = tonumber(ARGV[2]) + 1
redis.call('SET', KEYS[2], token)
if tonumber(ARGV[5]) > 0 then
    redis.call('PEXPIRE', KEYS[2], math.max(tonumber(ARGV[5]), tonumber(ARGV[4])))
end
redis.call('SET', KEYS[1], token .. ':' .. ARGV[3], 'PX', ARGV[4])
return token
"""
# ARGV[2], ARGV[3]: the channel and the conversation id to announce the release with.
_RELEASE = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1
"""
# KEYS: lease, turns; ARGV: lease value, turn, max_turns (0: keep all), ttl ms (0: no expiry).
_FENCED_APPEND = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then return 1 end
redis.call('RPUSH', KEYS[2], ARGV[2])
if tonumber(ARGV[3]) > 0 then redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1) end
if tonumber(ARGV[4]) > 0 then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
return 1
"""


class RedisChatMemory(Closeable):
    """Histories in Redis lists, one element per turn; optionally trimmed to the last ``max_turns``.

    A conversation is the list at ``{prefix}turns:{conversation_id}``; each element is one whole
    turn (the messages of one :meth:`append`, as JSON), so trimming drops whole elements and an
    assistant tool-call message can never be separated from its tool results. Images and files
    are stored inline (their bytes as base64 in the element), like replay items. ``append`` sends
    RPUSH, LTRIM and EXPIRE in one MULTI/EXEC transaction: another client sees the turn with its
    trimming, or neither, and turns appended at once from anywhere never interleave.

    A conversation's lease is the key ``{prefix}lease:{conversation_id}`` holding the fencing
    token and the owner, with a ``PX`` expiry (Redis's clock, so hosts need not agree on time);
    its token counter is ``{prefix}fence:{conversation_id}``. Granting, renewing, handing over,
    releasing (compare-and-delete) and the fenced ``append`` are each one Lua script. A release
    is also published on the channel ``{prefix}lease-released``, which :meth:`releases`
    follows, so runs waiting in other processes start at once instead of at their next poll.

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
        module, self._client, self._owns_client = connect_redis(client_or_url, "RedisChatMemory")
        self._error: type[Exception] = module.RedisError
        self.prefix = prefix
        self._max_turns = max_turns
        self._ttl_ms = None if seconds is None else max(1, round(seconds * 1000))
        self._releases = ReleaseNotices(self._client, f"{prefix}lease-released")
        self._scripts = {
            name: self._client.register_script(lua)
            for name, lua in (
                ("acquire", _ACQUIRE),
                ("renew", _RENEW),
                ("hand_over", _HAND_OVER),
                ("release", _RELEASE),
                ("append", _FENCED_APPEND),
            )
        }

    def _key(self, conversation_id: str) -> str:
        return f"{self.prefix}turns:{conversation_id}"

    def _lease_key(self, conversation_id: str) -> str:
        return f"{self.prefix}lease:{conversation_id}"

    def _fence_key(self, conversation_id: str) -> str:
        return f"{self.prefix}fence:{conversation_id}"

    @staticmethod
    def _lease_value(lease: Lease) -> str:
        return f"{lease.token}:{lease.owner}"

    @contextmanager
    def _guard(self, action: str) -> Iterator[redis.Redis]:
        """The client; every redis-py failure becomes a ChatMemoryError with it as the cause."""
        try:
            yield self._client
        # A key redis-py cannot encode (a lone surrogate in a conversation id) is ours too.
        except (self._error, UnicodeEncodeError) as error:
            raise ChatMemoryError(f"Redis chat memory: could not {action}: {error}") from error

    def spend(self, conversation_id: str) -> float:
        """USD the conversation's runs spent so far (a per-conversation ``Budget``), kept at
        ``{prefix}spend:{conversation_id}``."""
        with self._guard("read the spend") as client:
            value = client.get(f"{self.prefix}spend:{conversation_id}")
        return float(value) if value is not None else 0.0

    def add_spend(self, conversation_id: str, usd: float) -> float:
        """Add ``usd`` to the conversation's spend (``INCRBYFLOAT``: atomic from anywhere);
        returns the new total. It expires with the conversation's ``ttl``."""
        key = f"{self.prefix}spend:{conversation_id}"
        with self._guard("add to the spend") as client:
            total = float(client.incrbyfloat(key, usd))
            if self._ttl_ms is not None:
                client.pexpire(key, self._ttl_ms)
        return total

    def load(self, conversation_id: str) -> list[Message]:
        """The conversation's messages, oldest first (empty for an unknown id)."""
        with self._guard("load the conversation") as client:
            turns: list[bytes | str] = client.lrange(self._key(conversation_id), 0, -1)
        return decode_turns(enumerate(turns), "Redis chat memory", conversation_id)

    def append(
        self, conversation_id: str, messages: Sequence[Message], *, lease: Lease | None = None
    ) -> None:
        """Add a turn (one list element), trim and refresh the ttl, in one transaction.

        With ``lease`` the write is one script that first checks the lease key.
        """
        if lease is not None:
            self._fenced_append(conversation_id, messages, lease)
            return
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

    def _fenced_append(
        self, conversation_id: str, messages: Sequence[Message], lease: Lease
    ) -> None:
        keys = [self._lease_key(conversation_id), self._key(conversation_id)]
        data = encode_turn(messages) if messages else b""
        args: list[bytes | str | int] = [
            self._lease_value(lease),
            data,
            self._max_turns or 0,
            self._ttl_ms or 0,
        ]
        with self._guard("store the turn"):
            stored = self._scripts["append"](keys=keys, args=args)
        if not stored:
            raise lease_lost(lease)

    def try_acquire(self, conversation_id: str, owner: str, ttl: float) -> Lease | None:
        """The conversation's lease for ``ttl`` seconds, or ``None`` while another is live."""
        # Checked before anything is written: arguments a Lease refuses take nothing.
        lease = Lease(conversation_id=conversation_id, owner=owner, token=1, ttl=ttl)
        keys = [self._lease_key(conversation_id), self._fence_key(conversation_id)]
        with self._guard("take the lease"):
            token = self._scripts["acquire"](keys=keys, args=[owner, _ms(ttl), self._ttl_ms or 0])
        if token is None:
            return None
        return lease.model_copy(update={"token": int(token)})

    def renew(self, lease: Lease) -> bool:
        """Extend a live lease by its ttl from now; False if it was lost."""
        keys = [self._lease_key(lease.conversation_id)]
        with self._guard("renew the lease"):
            renewed = self._scripts["renew"](
                keys=keys, args=[self._lease_value(lease), _ms(lease.ttl)]
            )
        return bool(renewed)

    def hand_over(self, lease: Lease, owner: str, ttl: float) -> Lease | None:
        """Pass ``lease`` to ``owner`` with the next token, if no grant was made after it.

        Live, expired or released, ``lease`` passes as long as the fence key still counts its
        token; one script checks and grants.
        """
        successor = Lease(
            conversation_id=lease.conversation_id, owner=owner, token=lease.token + 1, ttl=ttl
        )
        keys = [self._lease_key(lease.conversation_id), self._fence_key(lease.conversation_id)]
        args: list[str | int] = [
            self._lease_value(lease),
            lease.token,
            owner,
            _ms(ttl),
            self._ttl_ms or 0,
        ]
        with self._guard("hand the lease over"):
            token = self._scripts["hand_over"](keys=keys, args=args)
        return None if token is None else successor

    def release(self, lease: Lease) -> None:
        """End a live lease now (compare-and-delete: a lost lease is left alone)."""
        with self._guard("release the lease"):
            self._scripts["release"](
                keys=[self._lease_key(lease.conversation_id)],
                args=[
                    self._lease_value(lease),
                    f"{self.prefix}lease-released",
                    lease.conversation_id,
                ],
            )

    def releases(self) -> Observable[str]:
        """Conversation ids whose lease was released, by any client of this prefix (hot).

        A hint, not a guarantee (a notice published while nobody listened is gone): it wakes
        waiting runs early, and they poll anyway.
        """
        return self._releases.observable

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
                client.delete(self._key(conversation_id), f"{self.prefix}spend:{conversation_id}")
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
        """Stop listening for lease releases; close the client if this memory made it from a URL."""
        self._releases.close()
        if self._owns_client:
            with self._guard("close"):
                self._client.close()


def _ms(seconds: float) -> int:
    """Seconds as the whole milliseconds of a PX expiry (at least 1: PX 0 is an error)."""
    return max(1, round(seconds * 1000))
