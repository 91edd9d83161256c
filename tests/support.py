"""Small helpers for tests: commands, running workers, reading a run back."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from redis.asyncio import Redis

from bus import keys, wire
from bus.commands import Command, NoopTask, deadline_in, new_run_id
from bus.events import ClientEvent, parse_event
from bus.runtime.runner import Runner
from bus.runtime.worker import Worker

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")


def narrow(kind: type[T], value: object) -> T:
    """``value`` as a ``kind``, failing the test if it is not one (narrows an event or
    payload union for the type checker where the test already expects that kind)."""
    assert isinstance(value, kind), f"expected {kind.__name__}, got {type(value).__name__}"
    return value


def noop_command(hops: int = 1, *, deadline_s: float = 60, **task: object) -> Command:
    """A no-op run of ``hops`` steps."""
    return Command(
        run_id=new_run_id(),
        tenant_id="t1",
        subject="alice",
        role=keys.Role.NOOP,
        deadline=deadline_in(deadline_s),
        payload=NoopTask(hops_left=hops - 1, **task),  # type: ignore[arg-type]
    )


async def events_of(redis: Redis, run_id: str, shard: int = 0) -> list[ClientEvent]:
    """Every event the run wrote so far, in order."""
    rows = await redis.xrange(keys.run_events(run_id, shard))
    return [parse_event(wire.raw_data(fields)) for _, fields in rows]


async def stream_commands(redis: Redis, role: keys.Role, shard: int = 0) -> list[Command]:
    """Every command ever published on a role stream (not trimmed in tests)."""
    rows = await redis.xrange(keys.role_stream(role, shard))
    return [wire.decode_command(fields) for _, fields in rows]


async def drain(workers: Sequence[Worker], redis: Redis, within: float = 20) -> None:
    """Run workers in burst mode until every stream is drained."""
    await asyncio.wait_for(Runner(workers, redis, burst=True).run(), within)


@contextlib.asynccontextmanager
async def running(workers: Sequence[Worker], redis: Redis) -> AsyncGenerator[Runner, None]:
    """Run workers in the background for the duration of the block."""
    runner = Runner(workers, redis)
    task = asyncio.create_task(runner.run())
    try:
        yield runner
    finally:
        runner.stop()
        await asyncio.wait_for(task, 20)


async def wait_for(
    predicate: Callable[[], Awaitable[object]], within: float = 10, interval: float = 0.02
) -> None:
    """Poll an async predicate until it is true or fail."""
    deadline = asyncio.get_running_loop().time() + within
    while not await predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(interval)


async def until_groups(redis: Redis, roles: Iterable[keys.Role | str], within: float = 120) -> None:
    """Wait until every role in ``roles`` has its stream on shard 0 (its worker, started in
    a process of its own, made the group: slow on a loaded host)."""
    wanted = list(roles)

    async def groups_ready() -> bool:
        return all([await redis.exists(keys.role_stream(role, 0)) for role in wanted])

    await wait_for(groups_ready, within=within)


async def until_done(redis: Redis, run_id: str, within: float = 60) -> None:
    """Wait until the run's last event is ``done``."""

    async def done() -> bool:
        events = await events_of(redis, run_id)
        return bool(events) and events[-1].type == "done"

    await wait_for(done, within=within)


async def until_serving(
    redis: Redis, roles: Iterable[keys.Role | str], http: httpx.AsyncClient, within: float = 90
) -> None:
    """Wait until every role in ``roles`` has its stream on shard 0 (its worker made the
    group) and the API behind ``http`` (an httpx.AsyncClient) answers ``/readyz``."""

    async def groups_ready() -> bool:
        for role in roles:
            if not await redis.exists(keys.role_stream(role, 0)):
                return False
        return True

    async def api_ready() -> bool:
        import httpx

        try:
            return (await http.get("/readyz")).status_code == 200
        except httpx.HTTPError:
            return False

    await wait_for(groups_ready, within=within, interval=0.2)
    await wait_for(api_ready, within=within, interval=0.2)
