"""Epochs (bus.epochs) on a real Redis: a step delivered at a settings epoch this process
has read a tenant's settings version at costs no read; a change's new epoch makes the next
step read it again; a worker's read brings the epochs read right behind it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis.asyncio import Redis

from bus import epochs, keys, tenant_versions
from bus.runtime.reads import GroupReads
from tests.integration.agents.round_trips import NO_ROLE, counting


@pytest.fixture
def at_epoch() -> Iterator[None]:
    """Whatever the test sets `epochs.SETTINGS` to is undone after it."""
    token = epochs.SETTINGS.set(None)
    yield
    epochs.SETTINGS.reset(token)


async def epoch_now(redis: Redis) -> bytes:
    epoch = await redis.get(keys.settings_epoch(0))
    assert epoch is not None
    return epoch


async def test_a_step_at_an_epoch_already_seen_reads_no_version(
    real_redis: Redis, at_epoch: None
) -> None:
    await tenant_versions.bump(real_redis, "t1", shards=1)
    epochs.SETTINGS.set(await epoch_now(real_redis))
    with counting() as costs:
        assert await tenant_versions.current(real_redis, "t1") == 1
        assert await tenant_versions.current(real_redis, "t1") == 1
    assert costs.redis_names[NO_ROLE]["GET"] == 1  # the first step read it, the second did not


async def test_a_change_gives_a_new_epoch_and_the_next_step_reads_the_new_version(
    real_redis: Redis, at_epoch: None
) -> None:
    await tenant_versions.bump(real_redis, "t1", shards=2)
    before = await epoch_now(real_redis)
    epochs.SETTINGS.set(before)
    assert await tenant_versions.current(real_redis, "t1") == 1
    await tenant_versions.bump(real_redis, "t1", shards=2)  # a PUT, in any process
    after = await epoch_now(real_redis)
    assert after != before
    assert await real_redis.get(keys.settings_epoch(1)) == after  # every shard's
    assert await tenant_versions.current(real_redis, "t1") == 1  # delivered before the PUT
    epochs.SETTINGS.set(after)
    assert await tenant_versions.current(real_redis, "t1") == 2


async def test_a_step_read_without_an_epoch_always_reads_the_version(
    real_redis: Redis, at_epoch: None
) -> None:
    await tenant_versions.bump(real_redis, "t2", shards=1)
    with counting() as costs:
        for _ in range(3):
            assert await tenant_versions.current(real_redis, "t2") == 1
    assert costs.redis_names[NO_ROLE]["GET"] == 3


async def test_an_epoch_is_made_only_where_there_is_none(real_redis: Redis) -> None:
    await real_redis.set(keys.settings_epoch(0), "kept")
    await epochs.ensure(real_redis, [keys.settings_epoch(0), keys.settings_epoch(1)])
    assert await real_redis.get(keys.settings_epoch(0)) == b"kept"
    made = await real_redis.get(keys.settings_epoch(1))
    assert made is not None and made != b"kept"


async def test_a_read_brings_the_watched_keys_as_they_are_after_it(real_redis: Redis) -> None:
    await real_redis.xgroup_create("s:w", "g", "$", mkstream=True)
    reads = GroupReads(real_redis, "g", "c", ["s:w"], watch=["w:1", "w:2"])
    await real_redis.set("w:1", "a")
    entry = await real_redis.xadd("s:w", {"data": "1"})
    assert await reads.read(10, 100) == [("s:w", entry, {b"data": b"1"})]
    assert reads.seen == {"w:1": b"a", "w:2": None}
    await real_redis.set("w:2", "b")
    assert await reads.read(10, 10) == []  # a read that times out brings them too
    assert reads.seen == {"w:1": b"a", "w:2": b"b"}
    await reads.aclose()


async def test_an_error_reply_to_a_watched_read_keeps_the_connection(real_redis: Redis) -> None:
    reads = GroupReads(real_redis, "missing", "c", ["s:none"], watch=["w:1"])
    with pytest.raises(Exception, match="NOGROUP"):
        await reads.read(1, None)
    await real_redis.xgroup_create("s:none", "missing", "$", mkstream=True)
    await real_redis.set("w:1", "x")
    assert await reads.read(1, None) == []
    assert reads.seen == {"w:1": b"x"}  # in step: the reply is this read's
    await reads.aclose()
