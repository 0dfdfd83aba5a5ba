"""Claiming lost runs in a Redis event log (see :mod:`rxreact.runs.takeover`).

A running run has ``run:{id}:meta = running``, which expires ``lost_after`` after its
owner's last heartbeat, and a lease hash ``run:{id}:owner`` (owner, token, conversation,
state). The claim is one Lua script, so it is atomic: for each run of the ``running`` set
whose meta key is gone while its lease still says running, it bumps the token, names the
claimant and sets the meta key again. A second worker running the script finds the meta key
back and claims nothing.
"""

from __future__ import annotations

from typing import Any

from rxreact.events import AgentEvent
from rxreact.runs._decisions import check_waiting, decision_error
from rxreact.runs._entries import End, decode_entry
from rxreact.runs._hub import seq_of
from rxreact.runs._keys import Keys
from rxreact.runs.takeover import LostRun

__all__ = ["claim_lost", "give_up", "record_decision"]

_CLAIM = """
local prefix, me, limit, lost_ms = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4]
local claimed = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local meta = prefix .. 'run:' .. id .. ':meta'
  local owner = prefix .. 'run:' .. id .. ':owner'
  local state = redis.call('GET', meta)
  if not state then
    if redis.call('HGET', owner, 'state') == 'running' then
      local token = redis.call('HINCRBY', owner, 'token', 1)
      redis.call('HSET', owner, 'owner', me)
      redis.call('SET', meta, 'running', 'PX', lost_ms)
      table.insert(claimed, id)
      table.insert(claimed, tostring(token))
      if #claimed >= 2 * limit then break end
    else
      redis.call('ZREM', KEYS[1], id)
    end
  elseif state ~= 'running' then
    redis.call('ZREM', KEYS[1], id)
  end
end
return claimed
"""


def claim_lost(client: Any, keys: Keys, owner: str, lost_ms: int, limit: int) -> list[LostRun]:
    """Claim up to ``limit`` lost runs for ``owner`` and read each one back."""
    reply = client.eval(_CLAIM, 1, keys.running, keys.prefix, owner, limit, lost_ms)
    pairs = [item.decode() if isinstance(item, bytes) else str(item) for item in reply]
    return [
        _read_back(client, keys, run_id, int(token))
        for run_id, token in zip(pairs[::2], pairs[1::2], strict=True)
    ]


def _read_back(client: Any, keys: Keys, run_id: str, token: int) -> LostRun:
    pipe = client.pipeline(transaction=False)
    pipe.hget(keys.owner(run_id), "conversation")
    pipe.hgetall(keys.checkpoints(run_id))
    pipe.xrange(keys.run(run_id))
    conversation, checkpoints, entries = pipe.execute()
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
    )


def give_up(client: Any, keys: Keys, lost: LostRun, reason: str, ttl_ms: int) -> None:
    """Mark the run lost (its followers read ``reason``) and forget it as running."""
    pipe = client.pipeline(transaction=False)
    pipe.hset(keys.owner(lost.run_id), mapping={"state": "lost", "info": reason})
    pipe.set(keys.meta(lost.run_id), "lost", px=ttl_ms)
    pipe.zrem(keys.running, lost.run_id)
    pipe.execute()


def record_decision(
    client: Any, keys: Keys, run_id: str, call_id: str, approved: bool, reason: str | None
) -> None:
    """Check the call waits, record the decision (the first wins), tell the owners."""
    pipe = client.pipeline(transaction=False)
    pipe.get(keys.meta(run_id))
    pipe.xrange(keys.run(run_id))
    state, entries = pipe.execute()
    if state != b"running":
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
    if not client.hsetnx(keys.decided(run_id), call_id, "1" if approved else "0"):
        raise decision_error(run_id, call_id, "it was decided already")
    pipe = client.pipeline(transaction=False)
    pipe.pexpire(keys.decided(run_id), 24 * 3600 * 1000)
    pipe.xadd(keys.decisions, fields, maxlen=1000, approximate=True)
    pipe.execute()
