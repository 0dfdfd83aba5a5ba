"""Fenced writes to a :class:`~rxreact.runs.RedisEventLog`: one Lua script per run and batch.

A run's lease (``run:{id}:owner``) names its owner and fencing token; a claim
(:mod:`rxreact.runs.redis._takeover`) bumps the token. The script below checks the lease and
does the run's writes in one atomic step, so once another process claimed the run, this
owner's next batch for it changes nothing: no event, checkpoint, end marker, meta, index or
active update. The heartbeat goes through the same script, so renewing a run's keys is fenced
too.

A lease that is gone altogether (its key expired: no heartbeat for ``ttl``) does not refuse
the write: nobody can claim such a run (the claim needs the lease), so this owner is still
its only writer.

The ops, in ``ARGV`` after the header, each a name and its arguments::

    e    id payload   XADD entry ``id`` (field e); an id at or below the stream's last entry
                      is skipped and counted: a re-sent entry that had arrived
    c    n body       HSETNX checkpoint n
    end  id payload   XADD the end marker, meta ``ended``, lease state ``ended``, and the run
                      off the ``running`` and ``woken`` indexes and the ``active`` set
    beat now          renew meta (``lost_after``): the owner's heartbeat; a running (not
                      parked) run is due in ``running`` at ``now + lost_after``
    park since deadline
                      lease state ``parked`` with ``since`` and ``deadline`` (``""``: none),
                      due in ``running`` at the deadline (``+inf``: only once decided)
    unpark now        lease state ``running`` again, due at ``now + lost_after``, not woken
    letgo             a parked run's meta deleted: this owner stops beating for it now

then the lease, stream, checkpoint and active keys are renewed (``ttl``), or, while the run
is parked (:mod:`rxreact.runs.parking`), kept without expiry: a parked run may wait for days
with no process beating for it. The script returns ``-1`` when the lease names someone else,
else how many entries it skipped as already there.

On a Redis Cluster the conversation's ``active`` set lives in the conversation's slot, not
the run's: the script leaves it out, and :func:`tidy_active` does its part afterwards, as
single-key commands, for the runs whose script was not refused. A crash in between leaves an
ended run in the set, which :meth:`~rxreact.runs.RedisEventLog.active_run` drops when it
looks (as it drops runs whose process died).

Scripts are sent by SHA (``EVALSHA``): the body travels once per server, not once per batch.
A server that does not know it (restarted, failed over, ``SCRIPT FLUSH``) gets it loaded
(on every master of a cluster) and the pipeline sent again; whatever of it ran the first time
is refused as duplicates or rewritten unchanged.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from rxreact.runs._write_queue import Fence
from rxreact.runs.redis._keys import Keys

__all__ = [
    "FENCED",
    "REFUSED",
    "Done",
    "add_call",
    "beat",
    "execute",
    "let_go",
    "op_names",
    "tidy_active",
]

FENCED = """
local lease = redis.call('HMGET', KEYS[1], 'owner', 'token')
if lease[1] and (lease[1] ~= ARGV[1] or lease[2] ~= ARGV[2]) then return -1 end
local run, ttl, lost = ARGV[3], ARGV[4], ARGV[5]
local skipped, i = 0, 6
while i <= #ARGV do
  local op = ARGV[i]
  if op == 'e' or op == 'end' then
    local added = redis.pcall('XADD', KEYS[2], ARGV[i + 1], op, ARGV[i + 2])
    if type(added) == 'table' and added.err then
      if not string.find(added.err, 'equal or smaller', 1, true) then return added end
      skipped = skipped + 1
    end
    if op == 'end' then
      redis.call('SET', KEYS[4], 'ended', 'PX', ttl)
      redis.call('HSET', KEYS[1], 'state', 'ended')
      redis.call('ZREM', KEYS[5], run)
      redis.call('SREM', KEYS[6], run)
      if KEYS[7] then redis.call('ZREM', KEYS[7], run) end
    end
    i = i + 3
  elseif op == 'c' then
    redis.call('HSETNX', KEYS[3], ARGV[i + 1], ARGV[i + 2])
    i = i + 3
  elseif op == 'beat' then
    redis.call('PEXPIRE', KEYS[4], lost)
    if redis.call('HGET', KEYS[1], 'state') ~= 'parked' then
      redis.call('ZADD', KEYS[5], tonumber(ARGV[i + 1]) + lost / 1000, run)
    end
    i = i + 2
  elseif op == 'park' then
    redis.call('HSET', KEYS[1], 'state', 'parked', 'since', ARGV[i + 1])
    if ARGV[i + 2] == '' then
      redis.call('HDEL', KEYS[1], 'deadline')
      redis.call('ZADD', KEYS[5], '+inf', run)
    else
      redis.call('HSET', KEYS[1], 'deadline', ARGV[i + 2])
      redis.call('ZADD', KEYS[5], ARGV[i + 2], run)
    end
    i = i + 3
  elseif op == 'letgo' then
    if redis.call('HGET', KEYS[1], 'state') == 'parked' then redis.call('DEL', KEYS[4]) end
    i = i + 1
  elseif op == 'unpark' then
    redis.call('HSET', KEYS[1], 'state', 'running')
    redis.call('HDEL', KEYS[1], 'since', 'deadline')
    redis.call('ZADD', KEYS[5], tonumber(ARGV[i + 1]) + lost / 1000, run)
    redis.call('SREM', KEYS[6], run)
    i = i + 2
  else
    return redis.error_reply('unknown op ' .. tostring(op))
  end
end
local parked = redis.call('HGET', KEYS[1], 'state') == 'parked'
for _, k in ipairs({1, 2, 3, 7}) do
  if KEYS[k] then
    if parked then redis.call('PERSIST', KEYS[k]) else redis.call('PEXPIRE', KEYS[k], ttl) end
  end
end
return skipped
"""

REFUSED = -1
"""What the script returns when the lease names another owner or token."""

_SHA = hashlib.sha1(FENCED.encode(), usedforsecurity=False).hexdigest()  # what EVALSHA names

_WIDTHS = {"e": 3, "c": 3, "end": 3, "park": 3, "beat": 2, "unpark": 2, "letgo": 1}
"""Each op's length in ``ARGV``, its name included."""

Done = tuple[str, str | None, Sequence[Any]]
"""A run's script that was not refused: its id, its conversation and its ops."""


def add_call(
    pipe: Any,
    keys: Keys,
    fence: Fence,
    conversation_id: str | None,
    ops: Sequence[Any],
    ttl_ms: int,
    lost_ms: int,
) -> None:
    """Queue the script for ``fence``'s run doing ``ops`` on ``pipe``; ``conversation_id`` is
    needed by ``end`` and ``beat`` only (its ``active`` set)."""
    run_id = fence.run_id
    bucket = keys.bucket(run_id)
    names = [
        keys.owner(run_id),
        keys.run(run_id),
        keys.checkpoints(run_id),
        keys.meta(run_id),
        keys.running(bucket),
        keys.woken(bucket),
    ]
    if conversation_id is not None and not keys.cluster:
        names.append(keys.active(conversation_id))
    header = (fence.owner, fence.token, run_id, ttl_ms, lost_ms)
    # Not pipe.evalsha: redis-py's cluster pipeline refuses that name, not the command.
    pipe.execute_command("EVALSHA", _SHA, len(names), *names, *header, *ops)


def execute(client: Any, build: Callable[[Any], None]) -> list[Any]:
    """One pipeline of fenced calls (``build`` adds them), its results in order (an error is
    returned, not raised); loads the script and sends again if the server lacks it.

    Raises:
        redis.RedisError: the pipeline could not be sent (the connection failed).
    """
    from redis.exceptions import NoScriptError  # redis-py is there: the log's client is its

    for _ in range(2):
        pipe = client.pipeline(transaction=False)
        build(pipe)
        results: list[Any] = pipe.execute(raise_on_error=False)
        if not any(isinstance(r, NoScriptError) for r in results):
            return results
        client.script_load(FENCED)  # a cluster client loads it on every master
    return results


def op_names(ops: Sequence[Any]) -> list[str]:
    """The names of the ops in ``ops`` (their arguments skipped)."""
    names: list[str] = []
    i = 0
    while i < len(ops):
        names.append(ops[i])
        i += _WIDTHS[ops[i]]
    return names


def tidy_active(client: Any, keys: Keys, done: Sequence[Done], ttl_ms: int) -> None:
    """On a cluster, the ``active`` set's part of the scripts in ``done``: an ended run off
    its conversation's set, the set kept while a run is parked, renewed at a heartbeat
    (``GT``: a set kept for a parked run is not given an expiry again). Nothing on one node.

    Raises:
        redis.RedisError: Redis could not be reached.
    """
    if not keys.cluster:
        return
    pipe = client.pipeline(transaction=False)
    queued = False
    for run_id, conversation_id, ops in done:
        if conversation_id is None:
            continue
        key = keys.active(conversation_id)
        for name in op_names(ops):
            if name == "end":
                pipe.zrem(key, run_id)
            elif name == "park":
                pipe.persist(key)
            elif name == "beat":
                pipe.pexpire(key, ttl_ms, gt=True)
            else:
                continue
            queued = True
    if queued:
        pipe.execute()


def let_go(
    client: Any,
    keys: Keys,
    owned: Sequence[tuple[Fence, str | None]],
    ttl_ms: int,
    lost_ms: int,
) -> None:
    """Stop beating for the parked runs among ``owned`` (a closing log): any process may
    claim one as soon as it is decided.

    Raises:
        redis.RedisError: Redis could not be reached.
    """

    def build(pipe: Any) -> None:
        for fence, conversation_id in owned:
            add_call(pipe, keys, fence, conversation_id, ("letgo",), ttl_ms, lost_ms)

    execute(client, build)


def beat(
    client: Any,
    keys: Keys,
    owned: Sequence[tuple[Fence, str | None]],
    ttl_ms: int,
    lost_ms: int,
) -> list[Fence]:
    """Renew the keys of the runs ``owned`` (fence, conversation) whose lease still names
    this owner; the fences of the others (another process claimed them).

    Raises:
        redis.RedisError: Redis could not be reached.
    """
    ops = ("beat", repr(time.time()))

    def build(pipe: Any) -> None:
        for fence, conversation_id in owned:
            add_call(pipe, keys, fence, conversation_id, ops, ttl_ms, lost_ms)

    results = execute(client, build)
    for result in results:
        if isinstance(result, Exception):
            raise result
    pairs = list(zip(owned, results, strict=True))
    done = [(f.run_id, c, ops) for (f, c), result in pairs if result != REFUSED]
    tidy_active(client, keys, done, ttl_ms)
    return [fence for (fence, _), result in pairs if result == REFUSED]
