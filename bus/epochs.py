"""Epochs: per-shard tokens a rare change replaces, read by a worker with each read.

A step checks two things that almost never change against Redis: its tenant's settings
version (`bus.tenant_versions`) and whether its user is being erased (`bus.fence`). Each
such change, once made, replaces an *epoch* of every shard (`watched`) with a new random
token. The workers of the roles that check them send ``MGET`` of their shards' epochs
right behind each ``XREADGROUP``, in the same write (`bus.runtime.reads.GroupReads`):
Redis runs it once the read is served, so the tokens are as of after the entries were
delivered, and the worker runs each step with its shard's tokens (`enter`). A process keeps
what it read against the token it read it at: a step delivered at a token already seen
takes that answer with no round trip of its own; a new token costs one read again.

Tokens are random, never counts: one read before Redis lost its keys (a flush, a restart
without persistence) never matches one after. A shard with no token (`ensure` makes one)
gives its steps none, and they read everything themselves.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bus import keys

if TYPE_CHECKING:
    from redis.asyncio import Redis

#: The current step's shard's settings epoch (None: not read with its entry).
SETTINGS: ContextVar[bytes | None] = ContextVar("agentbus_settings_epoch", default=None)
#: The current step's shard's fence epoch (None: not read with its entry).
FENCE: ContextVar[bytes | None] = ContextVar("agentbus_fence_epoch", default=None)


@dataclass(frozen=True, slots=True)
class Seen:
    """A shard's epochs as read behind the read that delivered an entry."""

    settings: bytes | None
    fence: bytes | None


def watched(shard: int) -> list[str]:
    """The epochs of ``shard`` a worker reads with its reads (one slot: the shard's)."""
    return [keys.settings_epoch(shard), keys.fence_epoch(shard)]


def seen(values: Mapping[str, bytes | None], shard: int) -> Seen:
    """The epochs of ``shard`` in the values a read brought (`watched`'s keys)."""
    return Seen(values[keys.settings_epoch(shard)], values[keys.fence_epoch(shard)])


def enter(at: Seen) -> None:
    """Run the current step (its own task) with these epochs."""
    SETTINGS.set(at.settings)
    FENCE.set(at.fence)


def new_token() -> str:
    """A token no epoch had before."""
    return secrets.token_hex(8)


async def ensure(redis: Redis, names: Iterable[str]) -> None:
    """Give each epoch of ``names`` a token if it has none (Redis started, or lost it)."""
    for name in names:
        await redis.set(name, new_token(), nx=True)


async def renew(redis: Redis, names: Iterable[str]) -> None:
    """Replace each epoch of ``names`` with one new token: after the change is made."""
    token = new_token()
    for name in names:
        await redis.set(name, token)
