"""A run's event stream's state on Redis (``XINFO STREAM``), alone or with the run's owner key
in one pipelined round trip: what `api.app.joins` decides a (re)join from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError

from api.app.ports import JoinState, StreamState

if TYPE_CHECKING:
    from redis.asyncio import Redis


async def stream_state(redis: Redis, stream: str) -> StreamState:
    """Existence, first and last ids of an event stream (and what was deleted, on Redis 7)."""
    try:
        info = await redis.xinfo_stream(stream)
    except ResponseError as e:
        return _state_of(e)
    return _state_of(info)


async def join_state(redis: Redis, owner_key: str, stream: str) -> JoinState:
    """The owner key's value and remaining life, and the stream's state, in one pipeline
    (the owner key and the stream share a hash tag, so this works on a cluster too)."""
    async with redis.pipeline(transaction=False) as pipe:
        pipe.get(owner_key)
        pipe.pttl(owner_key)
        pipe.xinfo_stream(stream)
        raw, ttl_ms, info = await pipe.execute(raise_on_error=False)
    for reply in (raw, ttl_ms):
        if isinstance(reply, Exception):
            raise reply
    return JoinState(None if raw is None else _s(raw), int(ttl_ms), _state_of(info))


def _state_of(info: dict[str, Any] | Exception) -> StreamState:
    """The state from an XINFO STREAM reply, or from its error (no such key: no stream)."""
    if isinstance(info, Exception):
        if isinstance(info, ResponseError) and "no such key" in str(info).lower():
            return StreamState(exists=False)
        raise info
    first = info.get("first-entry")
    deleted = info.get("max-deleted-entry-id")
    added = info.get("entries-added")
    return StreamState(
        exists=True,
        last_id=_s(info["last-generated-id"]),
        first_id=_s(first[0]) if first else None,
        length=int(info["length"]),
        entries_added=None if added is None else int(added),
        max_deleted_id=None if deleted is None else _s(deleted),
    )


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
