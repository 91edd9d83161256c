"""Publishing a conversation's runs in turn: the publish-once script, the hand-over, the sweeper.

A run is published by one Lua script (`PUBLISH_ONCE`) that records its owner and queues
its intake command for fair admission (`bus.fairshare`) together, so publishing the same
run id twice is a no-op. A run that waited
its turn (`bus.store.turns`) is stored with the script's keys and arguments; whoever
promotes it (the run-end hook of the run before it, an admission that found that run
stale, the sweeper) publishes it from that record with a fresh deadline. A crash between
the promotion's commit and the publish is repaired by the sweeper, which publishes again
every running turn whose run has not reached intake.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

import structlog

from bus import fairshare, wire
from bus.commands import AgentTask
from bus.readers import COMMAND
from bus.store.turn_types import Turn
from bus.store.turns import TurnStore
from bus.typed_redis import lua

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.events import RunStatus
    from bus.store import Scope

log = structlog.get_logger("api.turns")

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
PUBLISH_ONCE = (
    fairshare.FUNCTIONS
    + """
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
if ARGV[5] == '1' then
  local item = ARGV[8] .. '\\n' .. ARGV[9] .. '\\n' .. ARGV[4]
  fair_enqueue(F, ARGV[6], tonumber(ARGV[7]), item, tonumber(ARGV[10]))
  fair_admit(F, KEYS[2], tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14]), ARGV[3],
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
)

#: Index of the encoded command among the script's arguments.
COMMAND_ARG = 3
#: Indexes of the run's deadline and of the time, which fair admission reads.
DEADLINE_ARG, NOW_ARG = 8, 11

#: How long a running turn may wait for its run to reach intake before the sweeper
#: publishes it again (a no-op if the first publish happened).
UNSTARTED_GRACE_S = 15.0


def publish_call(keys: list[str], args: list[str | int | float]) -> str:
    """The stored form of one call of `PUBLISH_ONCE`."""
    return json.dumps({"keys": keys, "args": args})


class TurnPublisher:
    """Publishes the run whose turn has come.

    Args:
        redis: the shared Redis client.
        turns: the conversation turns.
    """

    def __init__(self, redis: Redis, turns: TurnStore) -> None:
        self._redis = redis
        self.turns = turns
        self._script = lua(redis, PUBLISH_ONCE)

    async def run_script(self, keys: list[str], args: list[str | int | float]) -> int:
        """Run `PUBLISH_ONCE` (1 published, 0 already, -1 another owner's run id, -2 the
        tenant's fair-share queue is full: the sweeper publishes it again later)."""
        reply = await self._script(keys=keys, args=args)
        return int(reply[0])

    async def publish(self, turn: Turn) -> None:
        """Publish a promoted turn's run, starting its time budget now."""
        doc = json.loads(turn.publish)
        keys: list[str] = doc["keys"]
        args: list[str | int | float] = doc["args"]
        command = COMMAND.read_json(str(args[COMMAND_ARG]))
        now = time.time()
        command = command.with_deadline(turn.running_until or now + turn.timeout_s)
        if isinstance(command.payload, AgentTask):
            task = AgentTask(state=command.payload.state.started(now))
            command = command.with_payload(task)
        args[COMMAND_ARG] = wire.encode(command)
        args[DEADLINE_ARG], args[NOW_ARG] = command.deadline, now  # for fair admission
        await self.run_script(keys, args)
        log.info("turn published", run_id=turn.run_id, conversation_id=turn.conversation_id)

    async def finished(
        self, owner: Scope, run_id: str, status: RunStatus, partial: str | None
    ) -> None:
        """The run ended: end its turn and publish the next one of its conversation."""
        turn = await self.turns.finish(owner, run_id, status, partial)
        if turn is not None:
            await self.publish(turn)

    async def sweep(self) -> int:
        """Publish every turn that is due but may not have been published; how many."""
        due = await self.turns.due(UNSTARTED_GRACE_S)
        for turn in due:
            await self.publish(turn)
        return len(due)

    async def sweep_forever(self, interval_s: float) -> None:
        """`sweep` at start and then every ``interval_s`` (an API replica runs this)."""
        while True:
            try:
                await self.sweep()
            except Exception as e:  # the loop must outlive any one failure
                log.warning("turn sweep failed", error=repr(e))
            await asyncio.sleep(interval_s)
