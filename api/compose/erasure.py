"""The erasure of a process, wired from the settings: the one place that lists the erasers.

A store that starts holding a user's data adds its eraser to `erasers_of`; erasure then
forgets it too, in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from api import signing
from api.app.erasure import Eraser, Erasure
from api.app.erasure_ledger import LEDGER_FILE, ErasureLedger
from api.streams.erasers import (
    AuditEraser,
    DocumentsEraser,
    FenceEraser,
    InFlightEraser,
    KeysEraser,
    MemoryEraser,
    RedisEraser,
    SqlEraser,
)
from bus.fence import Fence, erasure_key

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from api.compose.settings import AppSettings
    from bus.settings import BusSettings
    from bus.store import ErasureStore, Stores


def erasers_of(
    bus: BusSettings,
    store: ErasureStore,
    stores: Stores,
    redis: Redis,
    fence: Fence,
    *,
    idle_ms: int | None = None,
) -> list[Eraser]:
    """Every store's eraser, in the order they run. The fence goes up first (nothing of
    the user commits any more), then their keys go (no request of theirs is accepted
    anywhere), then their work in flight ends; only then is anything deleted. The
    documents' and Redis's erasers come before the SQL eraser, as they work from what SQL
    holds (the catalogue rows, the run ids), so an erasure stopped half-way and run again
    still finds it; the audit log's comes last. ``idle_ms``: how long a holder of one of
    their entries may be silent before it counts as dead (default: the claim idle time;
    0 when nothing runs)."""
    batch = bus.retention_batch
    memories = [] if stores.memories is None else [MemoryEraser(stores.memories, redis)]
    return [
        FenceEraser(fence, redis, bus),
        KeysEraser(store, batch, redis, bus.shards),
        InFlightEraser(redis, bus, idle_ms=idle_ms),
        DocumentsEraser(redis, bus),
        RedisEraser(redis, bus),
        *memories,
        SqlEraser(store, batch),
        AuditEraser(store, batch, stores.audit),
    ]


def erasure_of(
    settings: AppSettings, stores: Stores, redis: Redis, *, idle_ms: int | None = None
) -> Erasure | None:
    """Erasure over these stores (None without the erasure store), recorded in the data
    folder's ledger, naming users under the deployment's erasure key."""
    if stores.erasure is None:
        return None
    bus = settings.bus
    master = signing.master_key(settings.api.signing_key, bus.data_dir)
    fence = Fence(erasure_key(master))
    erasers = erasers_of(bus, stores.erasure, stores, redis, fence, idle_ms=idle_ms)
    ledger = ErasureLedger(bus.data_dir / LEDGER_FILE)
    return Erasure(stores.erasure, erasers, stores.audit, fence=fence, ledger=ledger)
