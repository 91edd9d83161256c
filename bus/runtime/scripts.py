"""Lua scripts that make a step's effects atomic.

Every key a script touches carries the run's shard hash tag, so the scripts run
unchanged on Redis Cluster; but for the budget counters the commit charges on a single
Redis (on a cluster, `bus.runtime.commit` charges them apart).
"""

from __future__ import annotations

import hashlib

from bus.budget import CHARGE_COUNTERS

# Commit a step: unless the step is already done, mark it done, publish the next
# commands and the step's final events, and ack the source entry, all at once.
# A crash before this leaves nothing; after it, everything.
#
# A step that does not itself end the run is where a cancel takes effect: when the run's
# cancel key exists, nothing is changed and the script returns 2 (the worker then ends
# the run as cancelled). Workers therefore read no cancel flag before a first delivery.
#
# A step may also contribute to a join (a gather branch): its value goes into the join's
# hash, and the contribution that completes the join publishes the join's command, once.
#
# A step of a user being erased (their fence key exists, `bus.fence`) changes nothing,
# whatever it is, and the script returns 3 (the worker gives back what the run held, then
# acks it): nothing of theirs is published again.
#
# A step of a run no budget limits may carry what its model calls spent (`bus.budget.Charge`):
# a committed step adds it to each counter, giving a dated counter its lifetime at its
# first charge, and returns the counters' new totals (1, tokens, usd, tokens, usd...).
#
# KEYS: source stream, steps set, events stream, cancel key, fence key, output streams...
#       [, join hash, then stream][, budget counters...]
# ARGV: group, entry id, step id, keys ttl, n outputs, stream maxlen, events maxlen,
#       events expire (0 = keep the run's ttl), n events, check cancel (0/1),
#       outputs..., events..., has join (0/1)[, member, value, expected members, then]
#       [, n counters, tokens, micro-dollars, each counter's lifetime (negative: dated)]
COMMIT = (
    CHARGE_COUNTERS
    + """
local group, entry, step = ARGV[1], ARGV[2], ARGV[3]
if redis.call('SISMEMBER', KEYS[2], step) == 1 then
  redis.call('XACK', KEYS[1], group, entry)
  return 0
end
local ttl, n_out, maxlen = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local ev_maxlen, ev_expire, n_ev = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])
if redis.call('EXISTS', KEYS[5]) == 1 then
  return 3
end
if ARGV[10] == '1' and redis.call('EXISTS', KEYS[4]) == 1 then
  return 2
end
redis.call('SADD', KEYS[2], step)
for i = 1, n_out do
  redis.call('XADD', KEYS[5 + i], 'MAXLEN', '~', maxlen, '*', 'data', ARGV[10 + i])
end
for i = 1, n_ev do
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ev_maxlen, '*', 'data', ARGV[10 + n_out + i])
end
if ev_expire > 0 then
  ttl = ev_expire
end
redis.call('EXPIRE', KEYS[2], ttl)
if n_ev > 0 or ev_expire > 0 then
  redis.call('EXPIRE', KEYS[3], ttl)
end
local j = 11 + n_out + n_ev
if ARGV[j] == '1' then
  local hash, target = KEYS[6 + n_out], KEYS[7 + n_out]
  if redis.call('HSETNX', hash, ARGV[j + 1], ARGV[j + 2]) == 1 then
    redis.call('EXPIRE', hash, ttl)
    if redis.call('HLEN', hash) == tonumber(ARGV[j + 3]) then
      redis.call('XADD', target, 'MAXLEN', '~', maxlen, '*', 'data', ARGV[j + 4])
    end
  end
end
redis.call('XACK', KEYS[1], group, entry)
local joined = ARGV[j] == '1'
local c = j + (joined and 5 or 1)
local n_sc = tonumber(ARGV[c] or '0')
if n_sc == 0 then
  return 1
end
return charge_counters(5 + n_out + (joined and 2 or 0), c + 2, n_sc, ARGV[c + 1], ARGV[c + 2])
"""
)

#: What EVALSHA names the commit script by.
COMMIT_SHA = hashlib.sha1(COMMIT.encode()).hexdigest()

# Move an entry to the dead-letter stream and end its run, atomically.
#
# KEYS: source stream, dead-letter stream, events stream (or the source again when
#       the run is unknown)
# ARGV: group, entry id, dead-letter fields as JSON, n events, events expire, events...
DEAD_LETTER = """
local group, entry = ARGV[1], ARGV[2]
local acked = redis.call('XACK', KEYS[1], group, entry)
if acked == 0 then
  return 0
end
redis.call('XADD', KEYS[2], '*', 'data', ARGV[3])
local n_ev, expire = tonumber(ARGV[4]), tonumber(ARGV[5])
for i = 1, n_ev do
  redis.call('XADD', KEYS[3], '*', 'data', ARGV[5 + i])
end
if n_ev > 0 then
  redis.call('EXPIRE', KEYS[3], expire)
end
return 1
"""


# Keep a worker's claims on its in-flight entries fresh, but only those it still owns: a
# plain ``XCLAIM ... 0`` would take back an entry another consumer reclaimed while this
# one stalled, and both would run the step. Returns the ids this consumer no longer owns
# (reclaimed by another, or acked by the step's other run).
#
# KEYS: the stream
# ARGV: group, consumer, entry ids...
KEEP_CLAIMS = """
local group, me = ARGV[1], ARGV[2]
local lost = {}
for i = 3, #ARGV do
  local pending = redis.call('XPENDING', KEYS[1], group, ARGV[i], ARGV[i], 1)
  if pending[1] and pending[1][2] == me then
    redis.call('XCLAIM', KEYS[1], group, me, 0, ARGV[i], 'JUSTID')
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
"""
