"""Per-tenant limits held in Redis, so every API replica enforces the same numbers.

* **Rate**: runs a tenant may start per minute, with a burst (GCRA: one key per tenant
  holding the "theoretical arrival time"; no counters to reset, exact across replicas).
* **Concurrent runs**: a sorted set of the tenant's runs in flight, scored by deadline.
  A run leaves it when it ends (the workers' run-end hook calls :func:`release`, for every
  way a run can end: done, error, timeout, cancelled, dead-lettered) and, should that ever
  be missed (a worker killed between commit and hook), at its deadline at the latest,
  because no step of a run starts after its deadline. A plain counter would leak a slot
  forever on such a miss; the relay could only release runs somebody is watching.
"""

from __future__ import annotations

import hashlib
import math
import time
from typing import TYPE_CHECKING

from api.app.ports import Verdict
from bus import keys
from bus.redis_io.lua import run_script
from bus.redis_io.shared_mux import mux_for

if TYPE_CHECKING:
    from redis.asyncio import Redis

# GCRA. KEYS: rate key. ARGV: now (ms), emission interval (ms), burst.
# Returns 0 when allowed, else the milliseconds to wait.
_RATE = """
local now, interval, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local new_tat = tat + interval
local wait = new_tat - now - burst * interval
if wait > 0 then return math.ceil(wait) end
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil(new_tat - now) + 1000)
return 0
"""

# KEYS: the tenant's active-runs set. ARGV: now (s), run id, deadline (s), limit, ttl (s).
# Returns {1, 0} when admitted (also when the run already holds a slot: a retry), else
# {0, the soonest deadline in the set}.
_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return {1, '0'} end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, first[2]}
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[5])
return {1, '0'}
"""

_RATE_SHA = hashlib.sha1(_RATE.encode()).hexdigest()
_ACQUIRE_SHA = hashlib.sha1(_ACQUIRE.encode()).hexdigest()

#: Longest Retry-After suggested for a full quota: runs usually end long before deadline.
MAX_QUOTA_RETRY_S = 5


class TenantLimits:
    """Rate limit and concurrent-run quota of each tenant (the :class:`api.app.ports.RateLimits`
    port, on Redis).

    Args:
        redis: the shared Redis client.
        per_minute: run starts per tenant per minute; 0 switches the rate limit off.
        burst: starts allowed at once before the rate applies.
        max_active: runs in flight per tenant; 0 switches the quota off.
    """

    def __init__(self, redis: Redis, *, per_minute: int, burst: int, max_active: int) -> None:
        self._redis = redis
        self.per_minute = per_minute
        self.burst = burst
        self.max_active = max_active

    async def check_rate(self, tenant_id: str) -> Verdict:
        """Count one run start against the tenant's rate."""
        if self.per_minute <= 0:
            return Verdict(True)
        interval_ms = max(1, round(60_000 / self.per_minute))
        now_ms = int(time.time() * 1000)
        # On the process's pipelined connection, as the publish script (`bus.publish_once`):
        # through redis-py's client each POST checked a connection out of its pool.
        rate_key = keys.tenant_rate(tenant_id)
        wait_ms = await run_script(
            self._redis, _RATE, _RATE_SHA, [rate_key], [now_ms, interval_ms, self.burst]
        )
        wait = int(wait_ms)
        return Verdict(True) if wait <= 0 else Verdict(False, max(1, math.ceil(wait / 1000)))

    async def acquire(self, tenant_id: str, run_id: str, deadline: float) -> Verdict:
        """Take one of the tenant's concurrent-run slots for ``run_id`` until ``deadline``."""
        if self.max_active <= 0:
            return Verdict(True)
        now = time.time()
        ttl = max(60, math.ceil(deadline - now) + 60)
        ok, soonest = await run_script(
            self._redis,
            _ACQUIRE,
            _ACQUIRE_SHA,
            [keys.tenant_active_runs(tenant_id)],
            [now, run_id, deadline, self.max_active, ttl],
        )
        if int(ok):
            return Verdict(True)
        wait = math.ceil(float(soonest) - now)
        return Verdict(False, max(1, min(MAX_QUOTA_RETRY_S, wait)))

    async def release(self, tenant_id: str, run_id: str) -> None:
        """Give back the slot this process's `acquire` took for the run (idempotent).

        With the quota off, `acquire` took none, so there is nothing to give back and no
        command is sent (a question queued behind its conversation's run gives its slot
        back as it is queued). A run's end gives its slot back through `release`, whatever
        took it.
        """
        if self.max_active <= 0:
            return
        await release(self._redis, tenant_id, run_id)


async def release(redis: Redis, tenant_id: str, run_id: str) -> None:
    """Give a run's concurrent-run slot back; harmless for runs that never held one.

    Every run's end calls this, so it goes out on the process's pipelined connection.
    """
    await mux_for(redis).execute("ZREM", keys.tenant_active_runs(tenant_id), run_id)
