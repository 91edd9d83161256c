"""Quiescing a user being erased: their steps in flight end before anything is deleted.

Erasure fences the user first (`bus.fence`): from then on no step of theirs commits
anything but its ack. What is left are the entries of theirs already in the streams:

* an entry no consumer holds (not yet delivered, or done) is deleted now: it will never
  run (one delivered meanwhile reads as empty fields and is dead-lettered unparsed);
* an entry a consumer holds (in a group's pending list) is a step under way, which may
  write the store before its commit: it is waited for until its group acks it (its commit,
  refused by the fence, acks it). One whose consumer has not touched it for the claim
  idle time (a dead worker: a live one refreshes its claims) is claimed here and dropped,
  as a replica would have reclaimed it.

An entry is the user's when it names one of their runs, or their tenant and subject as
a command or a ledger record does (``"tenant_id":...`` and ``"subject":...``).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redis.asyncio import Redis

#: Entries read, and pending entries listed, per round trip.
_PAGE = 500
#: The consumer name a dropped entry is claimed under before it is acked.
ERASURE_CONSUMER = "erasure"


@dataclass(frozen=True, slots=True)
class Whose:
    """What marks an entry as the user's."""

    run_ids: Collection[str]
    tenant_id: str
    subject: str

    def names(self, fields: dict[bytes, bytes]) -> bool:
        """Whether the entry's fields name one of the runs, or the tenant and subject."""
        blob = b"\x00".join(v for pair in fields.items() for v in pair)
        if any(r.encode() in blob for r in self.run_ids):
            return True
        tenant = b'"tenant_id":' + json.dumps(self.tenant_id, ensure_ascii=False).encode()
        subject = b'"subject":' + json.dumps(self.subject, ensure_ascii=False).encode()
        return tenant in blob and subject in blob


@dataclass(frozen=True, slots=True)
class Quiesced:
    """What quiescing did: entries deleted unheld, waited for, dropped from a dead holder,
    and (when the wait ran out) still held."""

    deleted: int
    waited: int
    dropped: int
    still_held: int


async def _groups(r: Any, stream: str) -> list[str]:
    infos: list[dict[str, Any]] = await r.xinfo_groups(stream)
    names = [g["name"] for g in infos]
    return [n.decode() if isinstance(n, bytes) else str(n) for n in names]


async def _pending(r: Any, stream: str, groups: list[str]) -> dict[bytes, list[str]]:
    """Every pending entry id of the stream, with the groups holding it."""
    held: dict[bytes, list[str]] = {}
    for group in groups:
        start = "-"
        while True:
            page: list[dict[str, Any]] = await r.xpending_range(
                stream, group, min=start, max="+", count=_PAGE
            )
            for item in page:
                held.setdefault(item["message_id"], []).append(group)
            if len(page) < _PAGE:
                break
            start = "(" + page[-1]["message_id"].decode()
    return held


async def _sort(
    r: Any, stream: str, whose: Whose, tracked: dict[tuple[str, bytes], list[str]]
) -> int:
    """Delete the user's unheld entries of ``stream``; track the held ones. How many deleted."""
    if not await r.exists(stream):
        return 0
    held = await _pending(r, stream, await _groups(r, stream))
    deleted = 0
    start = "-"
    while True:
        page: list[tuple[bytes, dict[bytes, bytes]]] = await r.xrange(
            stream, min=start, max="+", count=_PAGE
        )
        theirs = [eid for eid, fields in page if whose.names(fields)]
        unheld = [eid for eid in theirs if eid not in held]
        for eid in theirs:
            if eid in held:
                tracked[(stream, eid)] = list(held[eid])
        if unheld:
            deleted += int(await r.xdel(stream, *unheld))
        if len(page) < _PAGE:
            return deleted
        start = "(" + page[-1][0].decode()


async def _settle(
    r: Any, stream: str, eid: bytes, groups: list[str], idle_ms: int
) -> tuple[list[str], bool]:
    """The groups still holding the entry; True when this dropped it from a dead holder."""
    left: list[str] = []
    dropped = False
    for group in groups:
        info: list[dict[str, Any]] = await r.xpending_range(
            stream, group, min=eid, max=eid, count=1
        )
        if not info:
            continue  # acked: its step ended (the fence made its commit an ack)
        if int(info[0]["time_since_delivered"]) >= idle_ms:
            claimed = await r.xclaim(stream, group, ERASURE_CONSUMER, idle_ms, [eid], justid=True)
            if claimed:
                await r.xack(stream, group, eid)
                # Not left behind as a consumer of the group (metrics count consumers).
                await r.xgroup_delconsumer(stream, group, ERASURE_CONSUMER)
                dropped = True
                continue
        left.append(group)
    if not left:
        await r.xdel(stream, eid)
    return left, dropped


async def quiesce(
    redis: Redis,
    streams: Iterable[str],
    whose: Whose,
    *,
    idle_ms: int,
    wait_s: float,
    poll_s: float = 0.05,
) -> Quiesced:
    """Delete the user's unheld entries and wait for the held ones (see the module).

    Args:
        redis: the broker.
        streams: every stream entries of many users share (`bus.forget.shared_streams`).
        whose: the user's runs, tenant and subject.
        idle_ms: a holder silent this long is dead: its entry is dropped (the claim idle
            time; 0 when nothing runs, as in a restore).
        wait_s: how long to wait for the held ones.
        poll_s: how often they are looked at again.
    """
    r: Any = redis  # redis-py types these replies as sync-or-async
    tracked: dict[tuple[str, bytes], list[str]] = {}
    deleted = 0
    for stream in streams:
        deleted += await _sort(r, stream, whose, tracked)
    waited, dropped = len(tracked), 0
    give_up = time.monotonic() + wait_s
    while tracked:
        for (stream, eid), groups in list(tracked.items()):
            left, gone = await _settle(r, stream, eid, groups, idle_ms)
            dropped += gone
            if left:
                tracked[(stream, eid)] = left
            else:
                del tracked[(stream, eid)]
        if not tracked or time.monotonic() > give_up:
            break
        await asyncio.sleep(poll_s)
    return Quiesced(deleted, waited - dropped - len(tracked), dropped, len(tracked))
