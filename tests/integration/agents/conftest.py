"""Single-mode runs through every role over a real Redis and a SQLite store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from redis.asyncio import Redis

from agents.llm.ports import LLM
from api.compose.roles import Roles
from api.compose.settings import AppSettings
from api.compose.workers import build_workers
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.events import ClientEvent
from bus.publish import publish, read_events
from bus.runtime.runner import Runner
from bus.settings import BusSettings
from bus.store import Stores, open_store

ROLES = (
    keys.Role.INTAKE,
    keys.Role.PLANNER,
    keys.Role.RETRIEVAL,
    keys.Role.RESEARCHER,
    keys.Role.GATEWAY,
    keys.Role.CRITIC,
    keys.Role.VERIFIER,
    keys.Role.FINALIZER,
)


@dataclass
class System:
    """Every single-mode role running in this process."""

    redis: Redis
    settings: BusSettings
    stores: Stores
    llm: Any = None

    async def ask(
        self,
        question: str,
        *,
        conversation_id: str | None = None,
        deadline_s: float = 30,
        **run_settings: Any,
    ) -> list[ClientEvent]:
        """Publish a question and return the run's events up to ``done``."""
        run_id = new_run_id()
        command = Command(
            run_id=run_id,
            tenant_id="t1",
            subject="alice",
            role=keys.Role.INTAKE,
            deadline=deadline_in(deadline_s),
            payload=AgentTask(
                state=RunState(
                    question=question,
                    conversation_id=conversation_id,
                    settings=RunSettings(**run_settings),
                )
            ),
        )
        await publish(self.redis, command, self.settings)
        async with asyncio.timeout(deadline_s + 10):
            return [e async for _, e in read_events(self.redis, run_id, 0, block_ms=200)]


@pytest.fixture
async def start_system(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> AsyncIterator[Callable[[LLM], Any]]:
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
        workers = build_workers(ROLES, real_redis, s.bus, roles, concurrency=4)
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
