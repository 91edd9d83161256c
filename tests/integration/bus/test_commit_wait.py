"""``AGENTBUS_REDIS_WAIT_REPLICAS`` on a server without replicas: the commit is applied but
not acknowledged, so it raises; the step's retry finds it done."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from redis.asyncio import Redis

from api.compose.settings import AppSettings
from bus import keys
from bus.errors import ReplicaAckMissing
from bus.noop import handle_noop
from bus.publish import publish
from bus.redis_io.shared_mux import close_mux
from bus.runtime.commit import DUPLICATE, Committer, prepare
from bus.runtime.consumer import Entry
from bus.runtime.context import StepContext
from bus.runtime.groups import ensure_group
from tests.support import noop_command

NOOP = keys.Role.NOOP


async def test_unacknowledged_commit_raises_and_its_retry_is_a_duplicate(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> None:
    waiting = make_settings(redis_wait_replicas=1, redis_wait_timeout_ms=50).bus
    stream = keys.role_stream(NOOP, 0)
    await ensure_group(real_redis, stream, "noop")
    cmd = noop_command(hops=2)
    await publish(real_redis, cmd, waiting)
    [(_, [(entry_id, fields)])] = await real_redis.xreadgroup("noop", "c1", {stream: ">"})
    entry = Entry(stream, entry_id, fields)
    result = await handle_noop(StepContext(cmd, 1, real_redis, waiting), cmd)
    prepared = prepare(cmd, result, waiting)
    try:
        with pytest.raises(ReplicaAckMissing):
            await Committer(real_redis, waiting, "noop").commit(entry, cmd, prepared)
        assert await real_redis.sismember(keys.run_steps(cmd.run_id, 0), cmd.step_id)  # pyright: ignore[reportGeneralTypeIssues] (redis-py: T | Awaitable[T])
        plain = Committer(real_redis, make_settings().bus, "noop")
        assert await plain.commit(entry, cmd, prepared) == DUPLICATE
    finally:
        await close_mux(real_redis)
