"""A scheduler replica that dies between claiming a tick and starting its run (a test child).

``python -m tests.integration.api.schedule_claimer NOW`` claims every tick due at NOW (Unix
seconds) in the store of its environment (``AGENTBUS_DATABASE_URL``), prints ``claimed
RUN_ID`` for each where its run would start, and hangs there until the test SIGKILLs it:
the claim is committed, the run was never published.
"""

from __future__ import annotations

import asyncio
import sys
from typing import cast

from api.app.ask import Ask, Started
from api.app.auth import Principal
from api.app.scheduler import Scheduler
from api.app.starter import RunStarter
from api.compose.settings import AppSettings
from bus.store import open_store


class Hang:
    """A run starter that announces the run and never starts it."""

    async def start(
        self, who: Principal, ask: Ask, *, idempotency_key: str | None = None
    ) -> Started:
        print(f"claimed {ask.run_id}", flush=True)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def main(now: float) -> None:
    settings = AppSettings.load()
    async with open_store(settings.bus) as stores:
        assert stores.schedules is not None
        replica = Scheduler(
            stores.schedules,
            cast(RunStarter, Hang()),
            stores.keys,
            misfire_grace_s=120,
            clock=lambda: now,
        )
        await replica.run_due()


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1])))
