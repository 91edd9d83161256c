"""The erasure of a process, wired from the settings: the one place that lists the erasers.

A store that starts holding a user's data adds its eraser to `erasers_of`; erasure then
forgets it too, in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from api.app.erasers import (
    AuditEraser,
    DocumentsEraser,
    KeysEraser,
    MemoryEraser,
    RedisEraser,
    SqlEraser,
)
from api.app.erasure import Eraser, Erasure

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings
    from bus.store import ErasureStore, Stores


def erasers_of(bus: BusSettings, store: ErasureStore, stores: Stores, redis: Redis) -> list[Eraser]:
    """Every store's eraser, in the order they run. The user's keys go first (no new run of
    theirs starts); the documents' and Redis's erasers come before the SQL eraser, as they
    work from what SQL holds (the catalogue rows, the run ids), so an erasure stopped
    half-way and run again still finds it; the audit log's comes last."""
    batch = bus.retention_batch
    memories = [] if stores.memories is None else [MemoryEraser(stores.memories)]
    return [
        KeysEraser(store, batch),
        DocumentsEraser(redis, bus),
        RedisEraser(redis, bus),
        *memories,
        SqlEraser(store, batch),
        AuditEraser(store, batch, stores.audit),
    ]


def erasure_of(bus: BusSettings, stores: Stores, redis: Redis) -> Erasure | None:
    """Erasure over these stores (None without the erasure store)."""
    if stores.erasure is None:
        return None
    return Erasure(stores.erasure, erasers_of(bus, stores.erasure, stores, redis), stores.audit)
