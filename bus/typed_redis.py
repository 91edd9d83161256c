"""Typed views of the redis-py commands whose signatures it leaves partly untyped.

redis-py annotates some commands with a bare ``dict`` or ``list`` (unknown types to a
strict checker) and every reply as ``T | Awaitable[T]``. Code that calls one of them takes
a view of its client or pipeline from here: a cast, nothing changes at run time, to the
signatures the commands have on a client without ``decode_responses`` (replies in bytes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import Pipeline

FieldValue = str | bytes | int | float


class Commands(Protocol):
    """The commands of an async client, with the replies Redis sends."""

    async def hgetall(self, name: str) -> dict[bytes, bytes]:
        """Every field of a hash (empty when the key does not exist)."""
        ...

    async def hget(self, name: str, key: str) -> bytes | None:
        """One field of a hash (None when it or the key does not exist)."""
        ...

    async def hlen(self, name: str) -> int:
        """How many fields a hash has."""
        ...

    async def hdel(self, name: str, *keys: str) -> int:
        """Remove fields of a hash; how many there were."""
        ...

    async def lrange(self, name: str, start: int, end: int) -> list[bytes]:
        """A list's items from ``start`` to ``end`` (inclusive)."""
        ...

    async def zrange(self, name: str, start: int, end: int) -> list[bytes]:
        """A sorted set's members by rank, from ``start`` to ``end`` (inclusive)."""
        ...

    async def zrangebyscore(
        self,
        name: str,
        min: float | str,
        max: float | str,
        start: int | None = None,
        num: int | None = None,
    ) -> list[bytes]:
        """A sorted set's members with scores between ``min`` and ``max``, lowest first."""
        ...

    async def ping(self) -> bool:
        """True when the server answers."""
        ...

    async def info(self, section: str | None = None) -> dict[str, Any]:
        """``INFO`` of one section (per node, ``{node: {...}}``, from a cluster client)."""
        ...

    async def xread(
        self, streams: Mapping[str, str], count: int | None = None, block: int | None = None
    ) -> list[tuple[bytes, list[tuple[bytes, dict[bytes, bytes]]]]]:
        """Entries after each stream's cursor, waiting up to ``block`` ms for the first."""
        ...


class QueuedCommands(Protocol):
    """The same commands queued on a pipeline (their replies come from ``execute``)."""

    def hset(
        self,
        name: str,
        key: str | None = None,
        value: FieldValue | None = None,
        mapping: Mapping[str, FieldValue] | None = None,
    ) -> object:
        """Queue setting a hash's fields."""
        ...

    def hgetall(self, name: str) -> object:
        """Queue reading every field of a hash."""
        ...

    def hmget(self, name: str, keys: Sequence[str]) -> object:
        """Queue reading some fields of a hash (None for each missing one)."""
        ...


class Script(Protocol):
    """A registered Lua script; its reply is whatever the script returns (any RESP value)."""

    async def __call__(
        self, keys: Sequence[str] | None = None, args: Iterable[FieldValue] | None = None
    ) -> Any:
        """Run the script (``EVALSHA``, loading it first when the server lacks it)."""
        ...


def lua(redis: Redis, source: str) -> Script:
    """Register a Lua script on the client, typed."""
    return cast("Script", redis.register_script(source))


class _ClientClass(Protocol):
    def from_url(self, url: str) -> Redis: ...


def from_url(url: str) -> Redis:
    """A client of the server at ``url`` (``Redis.from_url``, typed)."""
    from redis.asyncio import Redis

    return cast("_ClientClass", Redis).from_url(url)


def commands(redis: Redis) -> Commands:
    """The client, typed (the same object)."""
    return cast("Commands", redis)


def queued(pipe: Pipeline) -> QueuedCommands:
    """The pipeline, typed (the same object)."""
    return cast("QueuedCommands", pipe)
