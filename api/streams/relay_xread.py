"""The relay's XREAD over hundreds of streams, packed without re-encoding their names.

Each return of the relay's blocking read re-issues it over every watched stream. redis-py
packs such a command argument by argument (~190 µs for 200 streams, a sixth of the API
process's CPU in ``agentbus bench relay --clients 200``); here each stream's RESP bulk
string is built once, when it is first watched, and a read joins ready-made pieces (~25
µs). The read runs on a connection the reader holds for itself, the one it would occupy
while blocked anyway (`bus.runtime.reads.HeldConnection`, as the workers' reads). Only for
a plain :class:`redis.asyncio.Redis`; a cluster client keeps redis-py's own routing
(:func:`supports`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

from redis.asyncio import Redis

from bus.runtime.reads import HeldConnection

Entries = list[tuple[bytes, dict[bytes, bytes]]]
Reply = list[tuple[bytes, Entries]]


def supports(redis: object) -> bool:
    """Whether ``redis`` is a single-node client whose connections the relay may hold."""
    return isinstance(redis, Redis)


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(value), value)


class PackedXread:
    """``XREAD COUNT c BLOCK b STREAMS …`` on a held connection, names packed once.

    Args:
        redis: the shared single-node client; one of its pool's connections is held
            from the first read until :meth:`close`.
        count: entries per stream per read.
        block_ms: the BLOCK time.
    """

    def __init__(self, redis: Redis, *, count: int, block_ms: int) -> None:
        self._held = HeldConnection(redis, "")
        self._head = b"".join(
            _bulk(a) for a in (b"XREAD", b"COUNT", b"%d" % count, b"BLOCK", b"%d" % block_ms)
        ) + _bulk(b"STREAMS")
        self._names: dict[str, bytes] = {}

    def pack(self, streams: dict[str, str]) -> bytes:
        """The command for ``streams`` (name → the id to read after)."""
        names = self._names
        if len(names) > 2 * len(streams) + 64:  # forget streams nobody watches any more
            self._names = names = {n: b for n, b in names.items() if n in streams}
        parts = [b"*%d\r\n" % (6 + 2 * len(streams)), self._head]
        for name in streams:
            packed = names.get(name)
            if packed is None:
                packed = names[name] = _bulk(name.encode())
            parts.append(packed)
        parts.extend(_bulk(cursor.encode()) for cursor in streams.values())
        return b"".join(parts)

    async def read(self, streams: dict[str, str]) -> Reply:
        """Block until an entry follows a cursor (or BLOCK ends: then an empty reply).

        A failed or cancelled read drops the connection (its reply would be out of step);
        the next read takes another from the pool.
        """
        return parse(await self._held.call(self.pack(streams)))

    async def close(self) -> None:
        """Give the held connection back to the pool."""
        await self._held.aclose()


def parse(raw: Any) -> Reply:
    """XREAD's raw reply (RESP2 list or RESP3 map) as (stream, [(id, fields)])."""
    if raw is None:
        return []
    pairs = cast("dict[bytes, list[Any]]", raw).items() if isinstance(raw, dict) else raw
    out: Reply = []
    for name, rows in cast("Iterable[tuple[bytes, list[Any]]]", pairs):
        entries: Entries = []
        for entry_id, flat in rows:
            fields: dict[bytes, bytes] = {}
            if isinstance(flat, dict):
                fields = cast("dict[bytes, bytes]", flat)
            elif flat:
                items = cast("list[bytes]", flat)
                fields = dict(zip(items[::2], items[1::2], strict=True))
            entries.append((entry_id, fields))
        out.append((name, entries))
    return out
