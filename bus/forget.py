"""Forgetting runs in Redis: every key of a run, and what names it outside its own keys.

Used by retention (runs it pruned from SQL) and by erasing a user (their runs). Each family
of `bus.keys`, and what happens to it:

* the run's own keys (``run_prefix``: events, steps, cancel, owner, blobs, tool-call
  records and claims, joins, webhook registration and delivery list): deleted;
* its webhook deliveries (``webhook_delivery``) and its places in the shard's webhook sets
  (``webhook_due``, ``webhook_watch``): deleted, removed;
* budget keys named for the run (its counter ``budget:used:run:<id>``, its calls' charged
  markers): deleted; with a subject, that user's own counters
  (``budget:used:user:<subject>:...``) too;
* the tenant's concurrency set (``tenant_active_runs``): the run removed;
* idempotency keys (``idempotency``) whose value names the run: deleted;
* a conversation's first turn (``conversation_first_turn``) whose value names the run:
  deleted;
* shared streams (`shared_streams`: the role streams, the dead letters, the webhook
  watcher's wake-ups, ``runs.questions``, ``runs.results``; `scrub_streams`, erasure only):
  entries that name the run, deleted.

Keys that hold no user's data are left alone: tenant counters and settings versions,
rate limiters, the fair-share queues (runs in flight only), leases, relay wake streams,
used signatures (digests that expire), web sessions (they die with the user's API keys).
Every command touches one key, so this runs unchanged on Redis Cluster.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Iterable
from typing import TYPE_CHECKING, Any, Protocol, cast

from bus import keys
from bus.runtime.deadletter import dead_letter_stream
from bus.typed_redis import commands

if TYPE_CHECKING:
    from redis.asyncio import Redis

#: Keys read and deleted per round trip.
_PAGE = 500


class _Commands(Protocol):
    """The commands used here, as they reply on a client without ``decode_responses``."""

    def scan_iter(self, match: str, count: int) -> AsyncIterator[bytes]:
        """Every key matching ``match`` (on every node of a cluster)."""
        ...

    async def xrange(
        self, name: str, min: str, max: str, count: int
    ) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """Entries of a stream from ``min`` to ``max``."""
        ...

    async def exists(self, *names: str) -> int:
        """How many of the keys exist."""
        ...


def _commands(redis: Redis) -> _Commands:
    return cast("_Commands", redis)


async def scan_keys(redis: Redis, match: str) -> AsyncIterator[str]:
    """Every key matching the SCAN pattern ``match`` (on every node of a cluster)."""
    async for raw in _commands(redis).scan_iter(match=match, count=_PAGE):
        yield raw.decode()


def _run_of(key: str) -> str | None:
    """The run id of a key of one run (``ab:{tag}:run:<id>:...``), else None."""
    _, found, rest = key.partition(":run:")
    if not found or not key.startswith(f"{keys.PREFIX}:"):
        return None
    return rest.split(":", 1)[0] or None


def _glob_escape(text: str) -> str:
    """``text`` matched literally in a SCAN pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


async def _unlink(redis: Redis, names: Iterable[str]) -> int:
    """Delete keys one command each (keys of many slots), pipelined; how many existed."""
    batch = list(names)
    if not batch:
        return 0
    async with redis.pipeline(transaction=False) as pipe:
        for name in batch:
            pipe.unlink(name)
        replies: list[Any] = await pipe.execute()
    return sum(int(r) for r in replies)


async def _delivery_keys(redis: Redis, run_keys: Iterable[str]) -> tuple[list[str], list[str]]:
    """The webhook delivery hashes the runs' delivery lists name, and their ids."""
    lists = [k for k in run_keys if k.endswith(":deliveries")]
    found: list[str] = []
    ids: list[str] = []
    for name in lists:
        shard_tag = name.split(":", 2)[1]
        for member in await commands(redis).lrange(name, 0, -1):
            delivery_id = member.decode()
            ids.append(delivery_id)
            found.append(f"{keys.PREFIX}:{shard_tag}:webhooks:delivery:{delivery_id}")
    return found, ids


async def forget_runs(
    redis: Redis,
    tenant_id: str,
    run_ids: Collection[str],
    *,
    shards: int,
    subject: str | None = None,
) -> int:
    """Delete every Redis key of these runs of one tenant (one SCAN over the keyspace).

    Args:
        redis: the broker.
        tenant_id: the runs' tenant (its budget, quota and idempotency keys are searched).
        run_ids: the runs; nothing is searched when empty and ``subject`` is None.
        shards: the deployment's shard count (where a run's webhook sets are).
        subject: also delete this user's own budget counters (erasure).

    Returns:
        How many keys were deleted.
    """
    wanted = set(run_ids)
    if not wanted and subject is None:
        return 0
    # The run's own keys (and its budget counter, ``...:budget:used:run:<id>``).
    doomed: set[str] = set()
    async for key in scan_keys(redis, f"{keys.PREFIX}:*:run:*"):
        if _run_of(key) in wanted:
            doomed.add(key)
    deliveries, delivery_ids = await _delivery_keys(redis, doomed)
    doomed |= await _budget_keys(redis, tenant_id, wanted, subject)
    doomed |= set(await _idempotency_keys(redis, tenant_id, wanted))
    doomed |= set(await _first_turn_keys(redis, wanted))
    await _drop_members(redis, tenant_id, wanted, delivery_ids, shards)
    return await _unlink(redis, [*doomed, *deliveries])


async def _budget_keys(
    redis: Redis, tenant_id: str, wanted: set[str], subject: str | None
) -> set[str]:
    """The tenant's budget keys named for one of the runs (their counters, their calls'
    charged markers) and, with a subject, that user's own counters."""
    used = keys.budget_used(tenant_id, "")
    mine = f"{used}user:{subject}:" if subject is not None else None
    found: set[str] = set()
    match = f"{_glob_escape(used.removesuffix('used:'))}*"
    async for key in scan_keys(redis, match):
        # ``user:a:day:...`` is a's; ``user:a:b:day:...`` is user ``a:b``'s.
        theirs = mine is not None and key.startswith(mine)
        if any(run_id in key for run_id in wanted) or (
            theirs and key[len(mine or "") :].split(":")[0] in ("day", "month")
        ):
            found.add(key)
    return found


async def _first_turn_keys(redis: Redis, wanted: set[str]) -> list[str]:
    """The conversations' first turns (`bus.first_turns`) of one of the runs."""
    if not wanted:
        return []
    found: list[str] = []
    async for key in scan_keys(redis, f"{keys.PREFIX}:*:conversation:*:first-turn"):
        value: bytes | None = await redis.get(key)
        text = (value or b"").decode(errors="replace")
        if any(run_id in text for run_id in wanted):
            found.append(key)
    return found


async def _idempotency_keys(redis: Redis, tenant_id: str, wanted: set[str]) -> list[str]:
    """The tenant's idempotency keys whose value names one of the runs."""
    if not wanted:
        return []
    found: list[str] = []
    match = f"{_glob_escape(keys.idempotency(tenant_id, ''))}*"
    async for key in scan_keys(redis, match):
        value: bytes | None = await redis.get(key)
        text = (value or b"").decode(errors="replace")
        if any(run_id in text for run_id in wanted):
            found.append(key)
    return found


async def _drop_members(
    redis: Redis, tenant_id: str, wanted: set[str], delivery_ids: list[str], shards: int
) -> None:
    """Remove the runs from the sets that list runs of many users."""
    if not wanted:
        return
    runs = sorted(wanted)
    async with redis.pipeline(transaction=False) as pipe:
        pipe.zrem(keys.tenant_active_runs(tenant_id), *runs)
        for shard in range(shards):
            pipe.zrem(keys.webhook_watch(shard), *runs)
            if delivery_ids:
                pipe.zrem(keys.webhook_due(shard), *delivery_ids)
        await pipe.execute()


def shared_streams(shards: int) -> list[str]:
    """Every stream entries of many runs share: on every shard the role streams and their
    lanes, the dead letters and the webhook watcher's wake-ups; ``runs.questions`` and
    ``runs.results`` (a publisher's own results stream is its to clean)."""
    streams = [keys.QUESTIONS_STREAM, keys.RESULTS_STREAM]
    for shard in range(shards):
        for role in keys.Role:
            streams += keys.role_streams(role, shard)
        streams += [dead_letter_stream(shard), keys.webhook_wake(shard)]
    return streams


async def scrub_streams(redis: Redis, streams: Iterable[str], needles: Collection[str]) -> int:
    """Delete the entries of ``streams`` whose fields name one of ``needles`` (run ids).

    Reads each stream in pages (entries in flight are left to their consumers: the caller
    scrubs only runs that ended). Returns how many entries were deleted.
    """
    if not needles:
        return 0
    c = _commands(redis)
    marks = [n.encode() for n in needles]
    deleted = 0
    for stream in streams:
        if not await c.exists(stream):
            continue
        start = "-"
        while True:
            page = await c.xrange(stream, min=start, max="+", count=_PAGE)
            hits = [
                entry_id
                for entry_id, fields in page
                if any(m in v for v in (*fields.values(), *fields.keys()) for m in marks)
            ]
            if hits:
                deleted += int(await redis.xdel(stream, *hits))
            if len(page) < _PAGE:
                break
            start = "(" + page[-1][0].decode()
    return deleted
