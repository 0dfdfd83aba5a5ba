"""The Lua scripts of a Redis chat memory: each one atomic step on the server.

Every script touches the keys of one conversation only, which on a Redis Cluster share one
hash slot (see :mod:`rxreact.memory._redis_keys`): no script spans slots.
"""

from __future__ import annotations

__all__ = ["SCRIPTS"]

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
# KEYS: turns; ARGV: turn, max_turns (0: keep all), ttl ms (0: no expiry). An unfenced append
# is a script too rather than MULTI/EXEC, so it runs alike on one node and on a cluster.
_APPEND = """
redis.call('RPUSH', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 then redis.call('LTRIM', KEYS[1], -tonumber(ARGV[2]), -1) end
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
"""

SCRIPTS = {
    "acquire": _ACQUIRE,
    "renew": _RENEW,
    "hand_over": _HAND_OVER,
    "release": _RELEASE,
    "fenced_append": _FENCED_APPEND,
    "append": _APPEND,
}
