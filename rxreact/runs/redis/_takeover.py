"""Claiming lost runs in a Redis event log (see :mod:`rxreact.runs.takeover`).

A running run has ``run:{id}:meta = running``, which expires ``lost_after`` after its
owner's last heartbeat, and a lease hash ``run:{id}:owner`` (owner, token, conversation,
state). The claim is one Lua script per bucket (:mod:`rxreact.runs.redis._keys`: one on a single
node), so it is atomic: for each due run whose meta key is gone while its lease still says
running, it bumps the token, names the claimant and sets the meta key again. A second worker
running the script finds the meta key back and claims nothing.

A parked run (lease state ``parked``, with ``since`` and ``deadline``; see
:mod:`rxreact.runs.parking`) whose owner stopped beating is claimed only once there is
something to do: a decision recorded at or after ``since`` (the ``decided`` hash holds each
decision with its time), or its deadline passed. It stays parked: its new owner unparks it.

**The due index.** The script never walks every run: it reads the bucket's ``running`` sorted
set only up to now (a running run is scored at its last heartbeat plus ``lost_after``, a
parked one at its deadline, ``+inf`` without one) and the bucket's ``woken`` set (runs
decided on while parked), at most :data:`SCAN` of each. A run it looks at and cannot claim
is scored again (its owner is alive: at the meta key's expiry) or dropped (ended, lost, gone),
so a tick with 100,000 parked runs costs what one with 100 does. Runs indexed by older
versions (scored at their start) are all due once, and scored right then.
"""

from __future__ import annotations

import random
import time
from typing import Any

from rxreact.events import AgentEvent
from rxreact.runs._decisions import check_waiting, decision_error
from rxreact.runs._entries import End, decode_entry
from rxreact.runs.redis._keys import Keys
from rxreact.runs.redis._reader import seq_of
from rxreact.runs.takeover import LostRun

__all__ = ["SCAN", "claim_lost", "give_up", "record_decision"]

SCAN = 64
"""Due runs and woken runs a claim looks at per bucket and call, at most (one more call
takes the next ones: a looked-at run is scored past now or dropped)."""

_CLAIM = """
local base, me, limit, lost_ms = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local now, scan = tonumber(ARGV[5]), tonumber(ARGV[6])
local claimed = {}
local function due(id, owner)
  local deadline = tonumber(redis.call('HGET', owner, 'deadline') or '')
  if deadline and now >= deadline then return true end
  local since = tonumber(redis.call('HGET', owner, 'since') or '') or 0
  for _, decision in ipairs(redis.call('HVALS', base .. 'run:' .. id .. ':decided')) do
    local at = tonumber(string.match(decision, '^[01] ([^ ]+)') or '')
    if at and at >= since then return true end
  end
  return false
end
local function drop(id)
  redis.call('ZREM', KEYS[1], id)
  redis.call('SREM', KEYS[2], id)
end
local function parked_at(owner)
  return redis.call('HGET', owner, 'deadline') or '+inf'
end
local seen, ids = {}, redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, scan)
for _, id in ipairs(redis.call('SRANDMEMBER', KEYS[2], scan)) do table.insert(ids, id) end
for _, id in ipairs(ids) do
  if #claimed >= 2 * limit then break end
  if not seen[id] then
    seen[id] = true
    local meta = base .. 'run:' .. id .. ':meta'
    local owner = base .. 'run:' .. id .. ':owner'
    local state = redis.call('GET', meta)
    local lease = redis.call('HGET', owner, 'state')
    local claim = false
    if state == 'running' and lease == 'parked' then
      -- its owner is alive and applies decisions itself; past the deadline, look again
      -- when it could have died
      local deadline = tonumber(parked_at(owner))
      if deadline and deadline <= now then
        deadline = now + redis.call('PTTL', meta) / 1000
      end
      redis.call('ZADD', KEYS[1], deadline or '+inf', id)
    elseif state == 'running' and lease == 'running' then
      redis.call('ZADD', KEYS[1], now + redis.call('PTTL', meta) / 1000, id)
      redis.call('SREM', KEYS[2], id)
    elseif not state and lease == 'parked' then
      claim = due(id, owner)
      if not claim then
        redis.call('ZADD', KEYS[1], parked_at(owner), id)
        redis.call('SREM', KEYS[2], id)
      end
    elseif not state and lease == 'running' then
      claim = true
    elseif state ~= 'running' then
      drop(id)  -- ended, lost, or its keys expired
    end
    if claim then
      local token = redis.call('HINCRBY', owner, 'token', 1)
      redis.call('HSET', owner, 'owner', me)
      redis.call('SET', meta, 'running', 'PX', lost_ms)
      -- due again when this claimant could be gone; woken stays until it unparks
      redis.call('ZADD', KEYS[1], now + lost_ms / 1000, id)
      table.insert(claimed, id)
      table.insert(claimed, tostring(token))
    end
  end
end
return claimed
"""


def claim_lost(client: Any, keys: Keys, owner: str, lost_ms: int, limit: int) -> list[LostRun]:
    """Claim up to ``limit`` lost runs for ``owner`` and read each one back (one script per
    bucket, each in its bucket's slot, all in one pipeline; ``limit`` is shared out over
    the buckets from a random one on, so no bucket waits behind another)."""
    now = time.time()
    pipe = client.pipeline(transaction=False)
    share, extra = divmod(limit, keys.buckets)
    start = random.randrange(keys.buckets)
    for i in range(keys.buckets):
        bucket = (start + i) % keys.buckets
        most = share + (1 if i < extra else 0)
        if most:
            names = (keys.running(bucket), keys.woken(bucket))
            args = (keys.base(bucket), owner, most, lost_ms, now, SCAN)
            # Not pipe.eval: redis-py's cluster pipeline has its own, of another signature.
            pipe.execute_command("EVAL", _CLAIM, 2, *names, *args)
    pairs: list[str] = []
    for reply in pipe.execute():
        pairs.extend(item.decode() if isinstance(item, bytes) else str(item) for item in reply)
    return [
        _read_back(client, keys, run_id, int(token))
        for run_id, token in zip(pairs[::2], pairs[1::2], strict=True)
    ]


def _read_back(client: Any, keys: Keys, run_id: str, token: int) -> LostRun:
    pipe = client.pipeline(transaction=False)
    pipe.hmget(keys.owner(run_id), ["conversation", "state", "deadline"])
    pipe.hgetall(keys.checkpoints(run_id))
    pipe.xrange(keys.run(run_id))
    pipe.hgetall(keys.decided(run_id))
    (conversation, state, deadline), checkpoints, entries, decided = pipe.execute()
    events: list[AgentEvent] = []
    error: str | None = None
    try:
        for entry_id, fields in entries:
            events.extend(
                e for e in decode_entry(seq_of(entry_id), fields) if not isinstance(e, End)
            )
    except (ValueError, TypeError) as failure:
        error = f"an entry of run {run_id!r} is unreadable: {failure}"
    if error is None and [e.seq for e in events] != list(range(1, len(events) + 1)):
        error = f"the events of run {run_id!r} are not consecutive"
    ordered = sorted(checkpoints.items(), key=lambda item: int(item[0]))
    return LostRun(
        run_id,
        conversation.decode() or None if conversation else None,
        token,
        [(f"{run_id}/{n.decode()}", body) for n, body in ordered],
        events,
        error,
        parked=state == b"parked",
        deadline=float(deadline) if deadline else None,
        decisions={c.decode(): _decision(v) for c, v in decided.items()},
    )


def _decision(value: bytes) -> tuple[bool, str | None]:
    """A ``decided`` hash value: ``"1 <time> <reason>"`` (approved, when, why)."""
    approved, _, rest = value.decode().partition(" ")
    reason = rest.partition(" ")[2]
    return approved == "1", reason or None


def give_up(client: Any, keys: Keys, lost: LostRun, reason: str, ttl_ms: int) -> None:
    """Mark the run lost (its followers read ``reason``) and forget it as running."""
    pipe = client.pipeline(transaction=False)
    pipe.hset(keys.owner(lost.run_id), mapping={"state": "lost", "info": reason})
    pipe.set(keys.meta(lost.run_id), "lost", px=ttl_ms)
    bucket = keys.bucket(lost.run_id)
    pipe.zrem(keys.running(bucket), lost.run_id)
    pipe.srem(keys.woken(bucket), lost.run_id)
    pipe.execute()


def record_decision(
    client: Any, keys: Keys, run_id: str, call_id: str, approved: bool, reason: str | None
) -> None:
    """Check the call waits, record the decision (the first wins), tell the owners."""
    pipe = client.pipeline(transaction=False)
    pipe.get(keys.meta(run_id))
    pipe.xrange(keys.run(run_id))
    pipe.hget(keys.owner(run_id), "state")
    state, entries, lease = pipe.execute()
    if state != b"running" and not (state is None and lease == b"parked"):
        why = f"the run is {state.decode()}" if state else "no such run is running"
        raise decision_error(run_id, call_id, why)
    events = [
        e
        for entry_id, fields in entries
        for e in decode_entry(seq_of(entry_id), fields)
        if not isinstance(e, End)
    ]
    check_waiting(run_id, call_id, events)
    fields = {"run": run_id, "call": call_id, "approved": "1" if approved else "0"}
    if reason is not None:
        fields["reason"] = reason
    # "<approved> <time> <reason>": the claim of a parked run compares the time with its park.
    value = f"{'1' if approved else '0'} {time.time()!r} {reason or ''}"
    if not client.hsetnx(keys.decided(run_id), call_id, value):
        raise decision_error(run_id, call_id, "it was decided already")
    # Woken first: a claim of the run, if its owner is gone, finds it without a scan.
    bucket = keys.bucket(run_id)
    pipe = client.pipeline(transaction=False)
    pipe.sadd(keys.woken(bucket), run_id)
    pipe.pexpire(keys.decided(run_id), 24 * 3600 * 1000)
    pipe.xadd(keys.decisions(bucket), fields, maxlen=1000, approximate=True)
    pipe.execute()
