"""Fair share at the edge: how many run starts of one tenant an API process works on at once.

A tenant that posts a thousand questions at once would otherwise have a thousand starts in
progress in the process, each taking its turn on the event loop and on Redis, and another
tenant's single POST would wait behind all of them. With the gate, the rest of the flood
waits (asleep, costing nothing) for one of its tenant's few slots, and the other tenant's
start is one of few in progress. Per process: each API replica has its own gate.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator


class StartGate:
    """At most ``per_tenant`` run starts of each tenant in progress (0: no gate)."""

    def __init__(self, per_tenant: int) -> None:
        self.per_tenant = per_tenant
        self._gates: dict[str, tuple[asyncio.Semaphore, int]] = {}

    @contextlib.asynccontextmanager
    async def slot(self, tenant_id: str) -> AsyncGenerator[None]:
        """Hold one of the tenant's slots for the block (waits for one if all are taken)."""
        if self.per_tenant <= 0:
            yield
            return
        gate, users = self._gates.get(tenant_id) or (asyncio.Semaphore(self.per_tenant), 0)
        self._gates[tenant_id] = (gate, users + 1)
        try:
            async with gate:
                yield
        finally:
            gate, users = self._gates[tenant_id]
            if users <= 1:
                del self._gates[tenant_id]  # no tenant keeps a gate it no longer uses
            else:
                self._gates[tenant_id] = (gate, users - 1)

    def waiting(self, tenant_id: str) -> int:
        """Starts of the tenant in progress or waiting for a slot."""
        return self._gates.get(tenant_id, (None, 0))[1]
