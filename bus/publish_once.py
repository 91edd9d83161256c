"""The publish-once script: a run's owner, its intake command queued for fair admission
(`bus.fairshare`) and its webhook's registration, written together by one Lua script, so
publishing the same run id twice is a no-op.

The edge's run publishing calls it (`api.streams.run_publishing`): for a new run, and for a
run whose turn in its conversation has come. A variant writes the first turn of a new
conversation with its run (`bus.first_turns`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from bus import fairshare
from bus.redis_io.lua import run_script

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.typed_redis import FieldValue, Script

# Publish a run once: record its owner, queue it for fair admission (admitting what has
# room; `bus.fairshare`) or, with fair share off, XADD it, and register its webhook, all
# at once (one hash tag).
# KEYS: run owner, intake stream, the shard's fair-share keys (`keys.fair_keys`)
#       [, webhook hash, webhook watch, webhook wake].
# ARGV: owner value, ttl, stream maxlen, command, fair share on (1/0), tenant, priority
#       level, run id, deadline, weight, max pending, now, depth, fixed cap
#       [, webhook spec, its score, run id].
# Returns {1} published, {0} published before (a retry), {-1} the run id is another's,
# {-2, waiting, room} the tenant's queue is full (nothing written).
_PUBLISH = """
local owner = redis.call('GET', KEYS[1])
if owner then
  if owner == ARGV[1] then return {0} end
  return {-1}
end
local F = fair_keys(3)
if ARGV[5] == '1' then
  local waiting = tonumber(redis.call('HGET', F.pending, ARGV[6]) or '0')
  if waiting >= tonumber(ARGV[11]) then
    local now = tonumber(ARGV[12])
    return {-2, waiting, fair_capacity(F, now, tonumber(ARGV[13]), tonumber(ARGV[14]))}
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if first_turn then redis.call('SET', first_turn[1], first_turn[2], 'EX', ARGV[2]) end
if ARGV[5] == '1' then
  fair_submit(F, KEYS[2], ARGV[6], tonumber(ARGV[7]), ARGV[8], ARGV[9], ARGV[4],
    tonumber(ARGV[10]), tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14]), ARGV[3],
    fairshare_admit_at_once)
else
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'data', ARGV[4])
end
if #KEYS > 13 then
  redis.call('HSET', KEYS[14], 'spec', ARGV[15], 'cursor', '0-0')
  redis.call('EXPIRE', KEYS[14], ARGV[2])
  redis.call('ZADD', KEYS[15], ARGV[16], ARGV[17])
  redis.call('XADD', KEYS[16], 'MAXLEN', '~', 16, '*', 'w', '1')
end
return {1}
""".replace("fairshare_admit_at_once", str(fairshare.ADMIT_AT_ONCE))
PUBLISH_ONCE = fairshare.FUNCTIONS + "local first_turn = false\n" + _PUBLISH

# `PUBLISH_ONCE` if the tenant's settings version is still the one the caller's API key
# was checked at (`bus.tenant_versions`): the check the API would otherwise make in a
# round trip of its own before publishing. KEYS and ARGV: `PUBLISH_ONCE`'s, then the
# shard's copy of the version and the version expected. Returns {-3, the copy's value}
# when it differs (nothing written), else what `PUBLISH_ONCE` returns.
PUBLISH_IF_CURRENT = (
    fairshare.FUNCTIONS
    + """
local seen = redis.call('GET', KEYS[#KEYS]) or '0'
if tonumber(seen) ~= tonumber(ARGV[#ARGV]) then return {-3, seen} end
local KEYS = {unpack(KEYS, 1, #KEYS - 1)}
local ARGV = {unpack(ARGV, 1, #ARGV - 1)}
local first_turn = false
"""
    + _PUBLISH
)

# `PUBLISH_ONCE` for the first run of a conversation drawn for it, which writes the
# conversation's first turn (`keys.conversation_first_turn`) with the run: nothing of the
# turn goes to SQL, and a crash leaves both or neither. KEYS and ARGV: `PUBLISH_ONCE`'s,
# then the first turn's key and the shard's copy of the tenant's settings version; the
# turn (JSON, `bus.store.turn_types.FirstTurn`) and the version expected ('': none, no
# check). Returns what `PUBLISH_IF_CURRENT` returns.
PUBLISH_FIRST_TURN = (
    fairshare.FUNCTIONS
    + """
local expected = ARGV[#ARGV]
if expected ~= '' then
  local seen = redis.call('GET', KEYS[#KEYS]) or '0'
  if tonumber(seen) ~= tonumber(expected) then return {-3, seen} end
end
local first_turn = {KEYS[#KEYS - 1], ARGV[#ARGV - 1]}
local KEYS = {unpack(KEYS, 1, #KEYS - 2)}
local ARGV = {unpack(ARGV, 1, #ARGV - 2)}
"""
    + _PUBLISH
)

#: Index of the encoded command among the script's arguments.
COMMAND_ARG = 3
#: Indexes of the run's deadline and of the time, which fair admission reads.
DEADLINE_ARG, NOW_ARG = 8, 11


PUBLISH_ONCE_SHA = hashlib.sha1(PUBLISH_ONCE.encode()).hexdigest()
PUBLISH_IF_CURRENT_SHA = hashlib.sha1(PUBLISH_IF_CURRENT.encode()).hexdigest()
PUBLISH_FIRST_TURN_SHA = hashlib.sha1(PUBLISH_FIRST_TURN.encode()).hexdigest()


class _PublishOnce:
    """A publish script on the process's pipelined connection (`bus.redis_io.mux`)."""

    def __init__(self, redis: Redis, body: str = PUBLISH_ONCE, sha: str = PUBLISH_ONCE_SHA):
        self._redis = redis
        self._body = body
        self._sha = sha

    async def __call__(
        self, keys: Sequence[str] | None = None, args: Iterable[FieldValue] | None = None
    ) -> Any:
        return await run_script(
            self._redis, self._body, self._sha, list(keys or ()), list(args or ())
        )


def publish_once(redis: Redis) -> Script:
    """`PUBLISH_ONCE` for ``redis``, sent on the process's pipelined connection.

    Not through redis-py's client: a burst of POSTs would each check a connection out of
    its pool, and 1,000 at once opened hundreds of new connections (a connect and a
    handshake each) where one pipelined connection carries them all in a few writes.
    """
    return _PublishOnce(redis)


def publish_if_current(redis: Redis) -> Script:
    """`PUBLISH_IF_CURRENT` for ``redis``, on the process's pipelined connection."""
    return _PublishOnce(redis, PUBLISH_IF_CURRENT, PUBLISH_IF_CURRENT_SHA)


def publish_first_turn(redis: Redis) -> Script:
    """`PUBLISH_FIRST_TURN` for ``redis``, on the process's pipelined connection."""
    return _PublishOnce(redis, PUBLISH_FIRST_TURN, PUBLISH_FIRST_TURN_SHA)
