"""Revoking an API key from the command line, as the API's DELETE does: the key is revoked
in the store, then its tenant's settings version is bumped, so no API replica's cache of
checked keys accepts it once this returns (`api.app.auth`)."""

from __future__ import annotations

from redis.exceptions import RedisError

from api.app.keys import KeyView
from api.compose.commands import operator_keys
from api.compose.connection import connect
from api.compose.settings import AppSettings
from bus import tenant_versions
from bus.errors import RedisUnavailable


async def revoke_key(settings: AppSettings, key_id: str) -> tuple[KeyView | None, bool]:
    """Revoke the key ``key_id``; the key (None: no such key) and whether the API
    processes were told (False: Redis was unreachable, and they stop accepting the key
    within their cache's bound)."""
    async with operator_keys(settings) as keys:
        record = await keys.revoke(key_id)
    if record is None:
        return None, False
    try:
        async with connect(settings.bus) as conn:
            await tenant_versions.bump(conn.redis, record.tenant_id, shards=settings.bus.shards)
    except (RedisError, RedisUnavailable, OSError):
        return record, False
    return record, True
