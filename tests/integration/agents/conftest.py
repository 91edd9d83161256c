"""Single-mode runs through every role over a real Redis and a SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from redis.asyncio import Redis

from agents.llm.ports import LLM
from api.compose.roles import RUN_ROLES, Roles
from api.compose.settings import AppSettings
from api.compose.workers import build_workers
from bus.runtime.runner import Runner
from bus.store import open_store
from tests.integration.agents.system import StartSystem, System
from tests.sqlite_template import seed_sqlite


@pytest.fixture
async def start_system(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> AsyncIterator[StartSystem]:
    """Call with a model to start the roles; they stop when the test ends."""
    runners: list[tuple[Runner, asyncio.Task[None]]] = []
    contexts: list[Any] = []

    async def start(
        llm: LLM,
        *,
        sources: dict[str, Any] | None = None,
        budget_s: float = 5.0,
        retrieval: Any = None,
        registry: Any = None,
        resolver: Any = None,
        connect_override: Any = None,
        mcp: Any = None,
        **overrides: Any,
    ) -> System:
        s = make_settings(**overrides)
        await seed_sqlite(s.bus.resolved_database_url())  # migrated once, copied
        store_ctx = open_store(s.bus, migrate=True)
        stores = await store_ctx.__aenter__()
        contexts.append(store_ctx)
        roles = Roles(
            s,
            stores,
            llm=llm,
            sources=sources or {},
            gather_budget_s=budget_s,
            retrieval=retrieval,
            registry=registry,
            resolver=resolver,
            connect_override=connect_override,
            redis=real_redis,  # search_docs asks the retrieval role over the bus
            **({"mcp": mcp} if mcp is not None else {}),
        )
        workers = build_workers(RUN_ROLES, real_redis, s.bus, roles, concurrency=4)
        for w in workers:
            await w.ensure_groups()
        runner = Runner(workers, real_redis)
        runners.append((runner, asyncio.create_task(runner.run())))
        return System(real_redis, s.bus, stores, llm)

    yield start
    for runner, task in runners:
        runner.stop()
        await asyncio.wait_for(task, 10)
    for ctx in contexts:
        await ctx.__aexit__(None, None, None)
