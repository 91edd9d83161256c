"""Fair admission: a new run waits in its tenant's queue until the shard has room, and
the room goes to the tenants in turn, by weight (deficit round robin).

Without it a run goes straight onto the intake stream, and the role streams are first in,
first out: a tenant that posts 1,000 questions puts every other tenant's question behind
them, at every role. With it, each shard admits only as many runs as its researchers can
work on at once (``fair_depth`` x the researcher steps the live researcher workers take;
or ``fair_inflight``), so the role streams stay short, and a run that waits, waits in its
own tenant's queue:

* **Priorities.** Interactive runs (chat, REST, the CLI) are admitted before batch ones
  (``runs.questions``), whoever they belong to.
* **Weights.** Within a priority the tenants with runs waiting take turns: a turn admits
  up to the tenant's weight (``weight`` in its settings, default 1) of its runs, oldest
  first, then the next tenant's turn comes.
* **Backpressure.** A tenant may have ``fair_max_pending`` runs waiting per shard; more are
  refused (429 ``tenant_queue_full`` with ``Retry-After``; a ``rejected`` reply with
  ``retry_after_s`` for ``runs.questions``), nothing queues without bound.

Room is made when a run ends (the run-end hook calls `FairShare.finished`), when a run
pauses at a gate, and at each researcher worker's tick (once a second it announces its
capacity, which also admits: a run whose end was missed leaves at its deadline). Every
change is one Lua script over the shard's keys (one hash tag, one slot of a cluster), and
the one that admits a run also XADDs its intake command: a run is admitted once, or
waits, whichever process runs the script, and a crash leaves it in one place or the other.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import time
import uuid
from typing import TYPE_CHECKING

import structlog

from bus import keys
from bus.redis_io.lua import run_script
from bus.run_state import Priority
from bus.runtime import metrics

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings

log = structlog.get_logger("bus.fairshare")

LEVEL: dict[str, int] = {"interactive": 1, "batch": 2}
#: How many runs one script admits at most (the rest at the next chance).
ADMIT_AT_ONCE = 64
TICK_S = 1.0

# Functions over the shard's keys, from KEYS[base] on in the order of `keys.FAIR_PARTS`.
FUNCTIONS = """
local function fair_keys(base)
  return {
    ring = {KEYS[base], KEYS[base + 3]},
    credit = {KEYS[base + 1], KEYS[base + 4]},
    queue = {KEYS[base + 2], KEYS[base + 5]},
    seq = KEYS[base + 6], weight = KEYS[base + 7], inflight = KEYS[base + 8],
    pending = KEYS[base + 9], capacity = KEYS[base + 10],
  }
end

-- The next run of a priority level (deficit round robin): the tenant at the ring's head
-- gets its weight's worth of credit when it has less than one run's, is served a run for
-- each credit, and goes to the back when they are spent.
local function fair_next(F, level)
  local ring, credit, queue = F.ring[level], F.credit[level], F.queue[level]
  for _ = 1, redis.call('LLEN', ring) + 1 do
    local t = redis.call('LINDEX', ring, 0)
    if not t then return nil end
    local hk, tk = t .. '|' .. level .. '|h', t .. '|' .. level .. '|t'
    local head = tonumber(redis.call('HGET', F.seq, hk) or '0')
    local tail = tonumber(redis.call('HGET', F.seq, tk) or '0')
    if head >= tail then
      redis.call('LPOP', ring)
      redis.call('HDEL', credit, t)
    else
      local c = tonumber(redis.call('HGET', credit, t) or '0')
      if c < 1 then c = c + tonumber(redis.call('HGET', F.weight, t) or '1') end
      c = c - 1
      local field = t .. '|' .. level .. '|' .. head
      local item = redis.call('HGET', queue, field)
      redis.call('HDEL', queue, field)
      if redis.call('HINCRBY', F.pending, t, -1) <= 0 then redis.call('HDEL', F.pending, t) end
      if head + 1 >= tail then
        redis.call('LPOP', ring)
        redis.call('HDEL', credit, t)
        redis.call('HDEL', F.seq, hk, tk)
      else
        redis.call('HSET', F.seq, hk, head + 1)
        redis.call('HSET', credit, t, c)
        if c < 1 then redis.call('RPUSH', ring, redis.call('LPOP', ring)) end
      end
      if item then return item end
    end
  end
  return nil
end

-- How many runs the shard may have admitted: fixed, or what the live researchers take.
local function fair_capacity(F, now, depth, fixed)
  if fixed > 0 then return fixed end
  redis.call('ZREMRANGEBYSCORE', F.capacity, '-inf', now)
  local total = 0
  for _, member in ipairs(redis.call('ZRANGE', F.capacity, 0, -1)) do
    total = total + tonumber(string.match(member, '|(%d+)$') or '0')
  end
  return math.floor(total * depth + 0.5)
end

-- Admit waiting runs while there is room: XADD each one's intake command.
local function fair_admit(F, stream, now, depth, fixed, maxlen, limit)
  redis.call('ZREMRANGEBYSCORE', F.inflight, '-inf', now)
  local cap = fair_capacity(F, now, depth, fixed)
  local n = 0
  while n < limit and redis.call('ZCOUNT', F.inflight, now, '+inf') < cap do
    local item = fair_next(F, 1) or fair_next(F, 2)
    if not item then break end
    local a = string.find(item, '\\n', 1, true)
    local b = string.find(item, '\\n', a + 1, true)
    redis.call('ZADD', F.inflight, string.sub(item, a + 1, b - 1), string.sub(item, 1, a - 1))
    redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'data', string.sub(item, b + 1))
    n = n + 1
  end
  return n
end

-- Queue a run at the back of its tenant's queue. A tenant that had nothing waiting joins
-- the ring at its head (as fq_codel favours new flows): its first run is the next one
-- admitted, and a tenant that keeps runs waiting is served by turn.
local function fair_enqueue(F, tenant, level, item, weight)
  local tk = tenant .. '|' .. level .. '|t'
  local tail = tonumber(redis.call('HGET', F.seq, tk) or '0')
  local head = tonumber(redis.call('HGET', F.seq, tenant .. '|' .. level .. '|h') or '0')
  redis.call('HSET', F.queue[level], tenant .. '|' .. level .. '|' .. tail, item)
  redis.call('HSET', F.seq, tk, tail + 1)
  redis.call('HSET', F.weight, tenant, weight)
  redis.call('HINCRBY', F.pending, tenant, 1)
  if head >= tail then
    redis.call('LPUSH', F.ring[level], tenant)
    redis.call('HDEL', F.credit[level], tenant)
  end
end

-- Queue a run and admit what has room. A shard with no run waiting at either priority and
-- room for one more admits it at once, leaving its keys as queueing and admitting it would
-- (the tenant's weight set, its sequence and credit cleared); what waits, or a full shard,
-- takes the queue.
local function fair_submit(F, stream, tenant, level, id, deadline, data, weight, now, depth,
    fixed, maxlen, limit)
  redis.call('ZREMRANGEBYSCORE', F.inflight, '-inf', now)
  if redis.call('LLEN', F.ring[1]) == 0 and redis.call('LLEN', F.ring[2]) == 0
      and redis.call('ZCOUNT', F.inflight, now, '+inf') < fair_capacity(F, now, depth, fixed)
  then
    redis.call('HSET', F.weight, tenant, weight)
    redis.call('HDEL', F.seq, tenant .. '|' .. level .. '|h', tenant .. '|' .. level .. '|t')
    redis.call('HDEL', F.credit[level], tenant)
    redis.call('ZADD', F.inflight, deadline, id)
    redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', 'data', data)
    return 1
  end
  fair_enqueue(F, tenant, level, id .. '\\n' .. deadline .. '\\n' .. data, weight)
  return fair_admit(F, stream, now, depth, fixed, maxlen, limit)
end
"""

# KEYS: the shard's fair keys, then its intake stream.
# ARGV: now, depth, fixed cap, stream maxlen, run id that ended ('' none), capacity
#       member ('' none), its expiry. Returns {runs it admitted, runs still waiting}.
TICK = (
    FUNCTIONS
    + """
local F = fair_keys(1)
if ARGV[5] ~= '' then redis.call('ZREM', F.inflight, ARGV[5]) end
if ARGV[6] ~= '' then redis.call('ZADD', F.capacity, ARGV[7], ARGV[6]) end
local n = fair_admit(F, KEYS[12], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
  ARGV[4], 1000000)
local waiting = 0
for _, v in ipairs(redis.call('HVALS', F.pending)) do waiting = waiting + tonumber(v) end
return {n, waiting}
"""
)
TICK_SHA = hashlib.sha1(TICK.encode()).hexdigest()


# KEYS: as TICK. ARGV: now, depth, fixed cap, stream maxlen, tenant, priority level, run
#       id, deadline, intake command, weight, max pending. Returns {admitted, waiting}, or
#       {-1, waiting} when full.
ENQUEUE = (
    FUNCTIONS
    + """
local F = fair_keys(1)
local waiting = tonumber(redis.call('HGET', F.pending, ARGV[5]) or '0')
if waiting >= tonumber(ARGV[11]) then return {-1, waiting} end
local n = fair_submit(F, KEYS[12], ARGV[5], tonumber(ARGV[6]), ARGV[7], ARGV[8], ARGV[9],
  tonumber(ARGV[10]), tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4],
  1000000)
return {n, waiting + 1}
"""
)
ENQUEUE_SHA = hashlib.sha1(ENQUEUE.encode()).hexdigest()


def retry_after_s(pending: int, capacity: int) -> int:
    """Seconds a refused publisher should wait: a turn of the shard's room per run ahead
    (at least 1, at most 60)."""
    return max(1, min(60, math.ceil(pending / max(1, capacity))))


class FairShare:
    """A process's side of fair admission: make room when a run ends, tick.

    Args:
        redis: the shared Redis client.
        settings: shards, the stream cap and the fair-share settings.
    """

    def __init__(self, redis: Redis, settings: BusSettings) -> None:
        self._redis = redis
        self._settings = settings
        self._id = uuid.uuid4().hex[:12]

    @property
    def enabled(self) -> bool:
        """Whether runs are admitted by fair share at all."""
        return self._settings.fair_share

    async def _tick(self, shard: int, ended: str = "", capacity: int = 0) -> int:
        s = self._settings
        now = time.time()
        member = f"{self._id}|{capacity}" if capacity else ""
        run_keys = [*keys.fair_keys(shard), keys.role_stream(keys.Role.INTAKE, shard)]
        args: list[str | int | float] = [
            now,
            s.fair_depth,
            s.fair_inflight,
            s.stream_maxlen,
            ended,
            member,
            now + 3 * TICK_S,
        ]
        reply = await run_script(self._redis, TICK, TICK_SHA, run_keys, args)
        metrics.child(metrics.FAIR_WAITING, str(shard)).set(int(reply[1]))
        return int(reply[0])

    async def enqueue(
        self,
        shard: int,
        tenant_id: str,
        priority: Priority,
        run_id: str,
        deadline: float,
        data: str,
        *,
        weight: int = 1,
    ) -> int | None:
        """Queue a run's intake command ``data`` (admitting what has room); how many runs
        were admitted, or None when the tenant's queue is full. The API's starter does the
        same inside its run-start script (with the run's owner key, atomically)."""
        s = self._settings
        run_keys = [*keys.fair_keys(shard), keys.role_stream(keys.Role.INTAKE, shard)]
        args: list[str | int | float] = [time.time(), s.fair_depth, s.fair_inflight]
        args += [s.stream_maxlen, tenant_id]
        args += [LEVEL[priority], run_id, deadline, data, weight, s.fair_max_pending]
        reply = await run_script(self._redis, ENQUEUE, ENQUEUE_SHA, run_keys, args)
        admitted = int(reply[0])
        return None if admitted < 0 else admitted

    async def open_room(self, shard: int, capacity: int) -> int:
        """Announce ``capacity`` once (as a researcher's tick does) and admit; how many."""
        return await self._tick(shard, capacity=capacity)

    async def finished(self, shard: int, run_id: str) -> None:
        """A run ended or paused: its room goes to the next waiting run."""
        if self.enabled:
            await self._tick(shard, ended=run_id)

    async def tick_loop(self, capacity: int) -> None:
        """Announce ``capacity`` (researcher steps this process takes at once) on every
        shard, and admit, once a second until cancelled."""
        if not self.enabled:
            return
        shards = self._settings.shards
        share = max(1, math.ceil(capacity / shards))
        while True:
            for shard in range(shards):
                try:
                    await self._tick(shard, capacity=share)
                except Exception as e:  # admission must not stop the worker
                    log.warning("fair-share tick failed", shard=shard, error=str(e))
            await asyncio.sleep(TICK_S)
