"""The composition root: settings → broker, store, workers. Every process starts here."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from faststream.redis import RedisBroker
from redis.asyncio import Redis

from bus import broker as bus_broker
from bus.commands import Command
from bus.embedded import EmbeddedRedis
from bus.errors import BusError
from bus.events import RunStatus
from bus.keys import Role
from bus.noop import handle_noop
from bus.runtime.worker import Handler, RunEndHook, Worker
from bus.settings import Settings
from bus.store import RunStatus as StoreStatus
from bus.store import RunStore, make_engine
from bus.store.migrate import upgrade_async

#: The roles this build can run, with their handlers. Roles from later issues
#: (planner, researcher, ...) register here as they land.
HANDLERS: dict[Role, Handler] = {Role.NOOP: handle_noop}


class UnknownRole(BusError):
    """A worker was asked for a role this build has no handler for."""

    code = "unknown_role"


@dataclass
class Connection:
    """A connected broker and the Redis client the runtime uses."""

    broker: RedisBroker
    redis: Redis
    url: str


@contextlib.asynccontextmanager
async def connect(settings: Settings, *, embedded: bool = False) -> AsyncIterator[Connection]:
    """Connect to Redis; with ``embedded`` and no URL, start the embedded server first."""
    server: EmbeddedRedis | None = None
    if embedded and not settings.redis_url:
        server = EmbeddedRedis(settings.data_dir)
        url = server.start()
    else:
        url = bus_broker.resolve_redis_url(settings)
    broker = bus_broker.make_broker(url)
    try:
        redis = await bus_broker.connect(broker)
        yield Connection(broker, redis, url)
    finally:
        await broker.stop()
        if server:
            server.stop()


@contextlib.asynccontextmanager
async def open_store(settings: Settings, *, migrate: bool = False) -> AsyncIterator[RunStore]:
    """The state store (migrated to head first when ``migrate``)."""
    url = settings.resolved_database_url()
    if migrate:
        await upgrade_async(url)
    engine = make_engine(url)
    try:
        yield RunStore(engine)
    finally:
        await engine.dispose()


def run_end_recorder(store: RunStore) -> RunEndHook:
    """A hook that records a run's final status in the store (idempotent)."""

    async def record(command: Command, status: RunStatus) -> None:
        error_code = None if status == "done" else status
        await store.set_status(command.run_id, StoreStatus(status), error_code=error_code)

    return record


def build_workers(
    roles: Iterable[Role],
    redis: Redis,
    settings: Settings,
    *,
    concurrency: int = 1,
    on_run_end: RunEndHook | None = None,
) -> list[Worker]:
    """One worker per role, each wired to its handler."""
    workers: list[Worker] = []
    for role in roles:
        handler = HANDLERS.get(role)
        if handler is None:
            available = ", ".join(sorted(HANDLERS))
            raise UnknownRole(
                f"no handler for role {role!r} in this build", hint=f"available: {available}"
            )
        workers.append(
            Worker(role, handler, redis, settings, concurrency=concurrency, on_run_end=on_run_end)
        )
    return workers
