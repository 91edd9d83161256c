"""The durable delivery schedule in Redis: registrations, deliveries, and their due times.

Per shard (every key carries the shard's hash tag, so the scripts run on Redis Cluster):

* a run's registration ``run:{id}:webhook`` (its ``spec`` and the ``cursor`` of its event
  stream the watcher has processed), and the shard's ``webhooks:watch`` set of such runs;
* one hash per delivery (target, signed body, status, attempts, last outcome), listed per
  run in ``run:{id}:deliveries``;
* ``webhooks:due``, a sorted set of delivery ids by next attempt time. A dispatcher claims
  a due delivery by moving its score past a lease (one script), so two dispatchers never
  send the same attempt, and a dispatcher that dies mid-attempt leaves the delivery due
  again when the lease runs out. Nothing of it lives in a process's memory.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import TYPE_CHECKING, Any, TypeGuard

from pydantic import BaseModel, ConfigDict

from bus import keys
from bus.typed_redis import commands, lua, queued

if TYPE_CHECKING:
    from redis.asyncio import Redis


class WebhookSpec(BaseModel):
    """What a question asked for: where its run's webhooks go, and which ones.

    ``url`` is empty for a run followed only for its A2A push notification configs
    (`gateway.webhooks.push_configs`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str = ""
    tenant_id: str
    subject: str
    approvals: bool = False
    conversation_id: str | None = None


class DeliveryStatus(StrEnum):
    """Where a delivery is."""

    PENDING = "pending"  # waiting for its first attempt
    SENDING = "sending"  # an attempt is in flight
    RETRYING = "retrying"  # an attempt failed; another is scheduled
    DELIVERED = "delivered"  # the receiver answered 2xx
    FAILED = "failed"  # no 2xx within the retry window (or the receiver answered 410)
    REFUSED = "refused"  # the egress path refused the destination (allowlist, SSRF guard)


class Delivery(BaseModel):
    """One webhook message and its delivery state (``id`` is its ``webhook-id``)."""

    model_config = ConfigDict(frozen=True)

    id: str
    run_id: str
    tenant_id: str
    url: str
    type: str
    body: str
    status: DeliveryStatus
    attempts: int = 0
    created_at: float
    next_attempt_at: float | None = None
    last_attempt_at: float | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    delivered_at: float | None = None
    headers: str = ""  # JSON: the receiver's own headers (an A2A push config's token, auth)


# KEYS: delivery, due, run deliveries, run webhook, watch. ARGV: id, now, ttl, cursor,
# finished (0/1), run id, then the delivery's field/value pairs. Creating a delivery that
# exists changes nothing, so a watcher that processes an event twice enqueues it once.
_ENQUEUE = """
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV, 7))
  redis.call('EXPIRE', KEYS[1], ARGV[3])
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
  redis.call('RPUSH', KEYS[3], ARGV[1])
  redis.call('EXPIRE', KEYS[3], ARGV[3])
end
redis.call('HSET', KEYS[4], 'cursor', ARGV[4])
if ARGV[5] == '1' then redis.call('ZREM', KEYS[5], ARGV[6]) end
return 1
"""

# KEYS: due, delivery. ARGV: id, now, lease until. The delivery's fields, or nil when it is
# not due (another dispatcher holds it, or it finished).
_CLAIM = """
local due = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not due or tonumber(due) > tonumber(ARGV[2]) then return false end
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('ZREM', KEYS[1], ARGV[1])
  return false
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('HINCRBY', KEYS[2], 'attempts', 1)
redis.call('HSET', KEYS[2], 'status', 'sending', 'last_attempt_at', ARGV[2])
return redis.call('HGETALL', KEYS[2])
"""

# KEYS: due, delivery. ARGV: id, the attempt number claimed, next due time ('' = no more
# attempts), then field/value pairs. An attempt whose lease ran out and was claimed again
# elsewhere no longer owns the delivery: its outcome is dropped.
_FINISH = """
if redis.call('HGET', KEYS[2], 'attempts') ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[2], unpack(ARGV, 4))
if ARGV[3] == '' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
end
return 1
"""

# KEYS: lease. ARGV: owner, ms. 1 when the caller holds the lease (taken or renewed).
_LEASE = """
local owner = redis.call('GET', KEYS[1])
if not owner then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
if owner == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def _is_hash_reply(value: object) -> TypeGuard[list[Any] | dict[Any, Any]]:
    # A hash as a script returns it: flat field-value pairs (RESP2) or a map (RESP3).
    return isinstance(value, list | dict)


def _decode(raw: list[Any] | dict[Any, Any]) -> Delivery:
    if isinstance(raw, dict):
        pairs = {_text(k): _text(v) for k, v in raw.items()}
    else:
        pairs = {_text(raw[i]): _text(raw[i + 1]) for i in range(0, len(raw), 2)}
    fields: dict[str, Any] = {k: v for k, v in pairs.items() if k and v not in (None, "")}
    return Delivery.model_validate(fields)


class Schedule:
    """Reads and changes the delivery schedule of every shard.

    Args:
        redis: the broker's client.
        ttl_s: how long deliveries (and their per-run list) are kept.
    """

    def __init__(self, redis: Redis, *, ttl_s: int) -> None:
        self._redis = redis
        self._ttl_s = ttl_s
        self._enqueue = lua(redis, _ENQUEUE)
        self._claim = lua(redis, _CLAIM)
        self._finish = lua(redis, _FINISH)
        self._lease = lua(redis, _LEASE)

    async def enqueue(
        self,
        shard: int,
        spec: WebhookSpec,
        run_id: str,
        *,
        delivery_id: str,
        type: str,
        body: bytes,
        now: float,
        cursor: str,
        finished: bool,
        url: str | None = None,
        headers: str = "",
    ) -> None:
        """Schedule a delivery now (once per id) and move the run's cursor past its event.

        ``url`` and ``headers`` (JSON) are an A2A push config's; a REST webhook goes to
        the spec's URL.
        """
        fields: dict[str, str | int | float] = {
            "id": delivery_id,
            "run_id": run_id,
            "tenant_id": spec.tenant_id,
            "url": url or spec.url,
            "type": type,
            "body": body.decode(),
            "status": DeliveryStatus.PENDING.value,
            "attempts": 0,
            "created_at": now,
            "next_attempt_at": now,
        }
        if headers:
            fields["headers"] = headers
        flat = [x for pair in fields.items() for x in pair]
        await self._enqueue(
            keys=[
                keys.webhook_delivery(delivery_id, shard),
                keys.webhook_due(shard),
                keys.run_deliveries(run_id, shard),
                keys.run_webhook(run_id, shard),
                keys.webhook_watch(shard),
            ],
            args=[delivery_id, now, self._ttl_s, cursor, int(finished), run_id, *flat],
        )

    async def advance(self, shard: int, run_id: str, cursor: str, *, finished: bool) -> None:
        """Record that the run's events up to ``cursor`` were processed."""
        async with self._redis.pipeline(transaction=True) as pipe:
            queued(pipe).hset(keys.run_webhook(run_id, shard), "cursor", cursor)
            if finished:
                pipe.zrem(keys.webhook_watch(shard), run_id)
            await pipe.execute()

    async def due(self, shard: int, now: float, count: int) -> list[str]:
        """Ids of deliveries due by ``now``, the most overdue first."""
        due = keys.webhook_due(shard)
        ids = await commands(self._redis).zrangebyscore(due, "-inf", now, 0, count)
        return [i.decode() for i in ids]

    async def claim(
        self, shard: int, delivery_id: str, *, now: float, lease_until: float
    ) -> Delivery | None:
        """Take one attempt of a due delivery (None if it is not due any more)."""
        reply = await self._claim(
            keys=[keys.webhook_due(shard), keys.webhook_delivery(delivery_id, shard)],
            args=[delivery_id, now, lease_until],
        )
        if not _is_hash_reply(reply) or not reply:
            return None
        return _decode(reply)

    async def finish(
        self,
        shard: int,
        delivery: Delivery,
        status: DeliveryStatus,
        *,
        next_at: float | None,
        changes: dict[str, str | int | float],
    ) -> bool:
        """Record an attempt's outcome; False when the attempt had lost its lease."""
        fields: dict[str, str | int | float] = {"status": status.value, **changes}
        fields["next_attempt_at"] = "" if next_at is None else next_at
        flat = [x for pair in fields.items() for x in pair]
        done = await self._finish(
            keys=[keys.webhook_due(shard), keys.webhook_delivery(delivery.id, shard)],
            args=[delivery.id, delivery.attempts, "" if next_at is None else next_at, *flat],
        )
        return bool(done)

    async def for_run(self, run_id: str, shard: int) -> list[Delivery]:
        """The run's deliveries, oldest first."""
        ids = await commands(self._redis).lrange(keys.run_deliveries(run_id, shard), 0, -1)
        if not ids:
            return []
        async with self._redis.pipeline(transaction=False) as pipe:
            for i in ids:
                queued(pipe).hgetall(keys.webhook_delivery(i.decode(), shard))
            rows = await pipe.execute()
        return [_decode(row) for row in rows if row]

    async def hold_lease(self, shard: int, owner: str, ms: int) -> bool:
        """Take or renew the shard's watcher lease; False while another process holds it."""
        return bool(await self._lease(keys=[keys.webhook_lease(shard)], args=[owner, ms]))

    async def release_lease(self, shard: int, owner: str) -> None:
        """Give the lease up (only if it is still ours)."""
        key = keys.webhook_lease(shard)
        if _text(await self._redis.get(key)) == owner:
            await self._redis.delete(key)


def registration(spec: WebhookSpec) -> str:
    """A registration's ``spec`` field, as the run-start script stores it."""
    return json.dumps(spec.model_dump(mode="json"), separators=(",", ":"))
