"""Readiness: whether the broker and the state store answer, each within a short timeout."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from api.app.ports import Probe

#: How long each probe may take: a readiness probe's timeout must be longer.
READY_TIMEOUT_S = 2.0


@dataclass(frozen=True, kw_only=True)
class Readiness:
    """Probes the edge's dependencies at once (``GET /readyz``).

    Attributes:
        broker: a round trip to the broker.
        store: a read of the state store (any tenant-scoped read touches the database).
        timeout_s: how long each probe may take.
    """

    broker: Probe
    store: Probe
    timeout_s: float = READY_TIMEOUT_S

    async def check(self) -> dict[str, str]:
        """Each probe's name and ``ok``, or ``failed: <error>`` naming what went wrong."""
        probes = {"redis": self.broker, "store": self.store}
        # At once, so the answer comes within the timeout (the probes' own is longer).
        results = await asyncio.gather(
            *(asyncio.wait_for(probe(), self.timeout_s) for probe in probes.values()),
            return_exceptions=True,
        )
        checks: dict[str, str] = {}
        for name, result in zip(probes, results, strict=True):
            if isinstance(result, BaseException):  # any failure: not ready; say which and why
                checks[name] = f"failed: {type(result).__name__}: {str(result)[:200]}"
            else:
                checks[name] = "ok"
        return checks
