"""The roles of a single-mode run in this process, as the ``start_system`` fixture gives them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from redis.asyncio import Redis

from agents.llm.ports import LLM
from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.events import ClientEvent
from bus.publish import publish, read_events
from bus.settings import BusSettings
from bus.store import Stores


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


class StartSystem(Protocol):
    """The ``start_system`` fixture: start every role with this model (and settings)."""

    async def __call__(
        self,
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
    ) -> System: ...
