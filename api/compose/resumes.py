"""Paused runs continued on the bus (`api.app.ports.Resumes`, `agents.gates`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agents import gates

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from agents.gates import AllowAlways
    from bus.settings import BusSettings
    from bus.store import CheckpointStore, RunStore, Scope


class BusResumes:
    """Resumes from the checkpoint store, published to the run's next role.

    Args:
        checkpoints: the paused runs.
        runs: the run store.
        redis: the broker the continuation is published to.
        bus: the shards and streams.
        allow_always: persists an ``egress_allow_always`` decision, audited.
    """

    def __init__(
        self,
        checkpoints: CheckpointStore,
        runs: RunStore,
        redis: Redis,
        bus: BusSettings,
        allow_always: AllowAlways | None,
    ) -> None:
        # What `agents.gates.resume` and `resume_client_tools` both take first.
        self._on = (checkpoints, runs, redis, bus)
        self._allow_always = allow_always

    async def decide(self, scope: Scope, groups: Sequence[str], run_id: str, decision: str) -> None:
        """Resume with a gate's decision (its details come from the checkpoint)."""
        await gates.resume(
            *self._on,
            scope=scope,
            groups=groups,
            run_id=run_id,
            decision=decision,
            allow_always=self._allow_always,
        )

    async def client_tools(
        self, scope: Scope, groups: Sequence[str], run_id: str, results: Mapping[str, str]
    ) -> None:
        """Resume with the client's tool results."""
        await gates.resume_client_tools(
            *self._on,
            scope=scope,
            groups=groups,
            run_id=run_id,
            results=results,
        )

    async def more_info(self, scope: Scope, run_id: str) -> dict[str, Any]:
        """The open gate's details (``agents.gates.more_info``), unaudited: the operator's
        view on the command line."""
        return await gates.more_info(self._on[0], scope, run_id)
