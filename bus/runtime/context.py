"""What a handler gets for one step, and what it returns."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bus import keys, wire
from bus.commands import Command
from bus.events import ClientEvent, Done, ErrorEvent, FinalStatus
from bus.ledger import LedgerRecord
from bus.redis_io.shared_mux import mux_for
from bus.typed_redis import commands

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.budget import Charge
    from bus.runtime.leases import Leases
    from bus.settings import BusSettings
    from bus.store.turn_types import TurnEnd


@dataclass(frozen=True, slots=True)
class Join:
    """A contribution to a join barrier keyed by run and step (a gather branch).

    Attributes:
        name: the join, unique within the run (e.g. ``gather-3``).
        member: this contribution's name (e.g. the source).
        value: what this branch contributes (JSON text).
        expected: how many members complete the join.
        then: the command published, once, by the contribution that completes it.
    """

    name: str
    member: str
    value: str
    expected: int
    then: Command


@dataclass(frozen=True, slots=True)
class StepResult:
    """A step's effects, applied atomically by the runtime when the handler returns.

    Attributes:
        next: commands to publish (the run's next steps).
        events: client events written in the same transaction (e.g. ``done``).
        finished: set when the run ends with this step; its keys then expire
            ``events_ttl_s`` later.
        replies: (stream, JSON) pairs for streams outside the run's shard (an external
            publisher's ``reply_to``); written just before the commit, so at least once.
        join: a contribution to a join barrier (a gather branch).
        records: writes for the SQL store, appended to the shard's recorder stream in the
            commit (`bus.ledger`): durable with the step, off its critical path.
        charge: what the step's model calls spent, for a run no budget limits: charged
            with the commit (`bus.budget.Charge`).
        turn_end: the run's conversation turn, ended by the handler with the run's end
            (`bus.store.turn_types.TurnEnd`): the run-end hook publishes the turn it hands
            on. Durable before the step commits: a crash before the commit redelivers the
            step, whose end names that turn again (and publishing it twice is a no-op).
    """

    next: Sequence[Command] = ()
    events: Sequence[ClientEvent] = ()
    finished: FinalStatus | None = None
    replies: Sequence[tuple[str, str]] = ()
    join: Join | None = None
    records: Sequence[LedgerRecord] = ()
    charge: Charge | None = None
    turn_end: TurnEnd | None = None

    @classmethod
    def ending(cls, command: Command, status: FinalStatus, message: str) -> StepResult:
        """End the run here with ``status``: an ``error`` event, then ``done``."""
        run_id, step_id = command.run_id, command.step_id
        return cls(
            events=[
                ErrorEvent(run_id=run_id, step_id=step_id, code=status, message=message),
                Done(run_id=run_id, step_id=step_id, status=status),
            ],
            finished=status,
        )


@dataclass(slots=True)
class StepContext:
    """Per-step services: streaming events, bulky blobs, cancel checks, leases.

    ``leases`` are the worker's (`bus.runtime.leases`): keys the step holds while it runs,
    refreshed with its stream claim; None outside a worker (a lease then just expires).
    """

    command: Command
    delivery: int
    redis: Redis
    settings: BusSettings
    leases: Leases | None = None
    _events_key: str = field(init=False)

    def __post_init__(self) -> None:
        self._events_key = keys.run_events(self.command.run_id, self.command.shard)

    @property
    def events_key(self) -> str:
        """The run's event stream."""
        return self._events_key

    async def emit(self, *events: ClientEvent) -> None:
        """Write events to the run's stream now (streamed output such as tokens).

        They go out on the process's pipelined connection (`bus.redis_io.mux`), like the
        step's commit: no pool checkout per write, and one socket write for the events of
        every step that emits in the same turn of the event loop.
        """
        mux = mux_for(self.redis)
        key, maxlen = self._events_key, self.settings.events_maxlen
        sent = [
            mux.execute("XADD", key, "MAXLEN", "~", maxlen, "*", wire.DATA_FIELD, wire.encode(e))
            for e in events
        ]
        if len(sent) == 1:
            await sent[0]
        elif sent:
            await asyncio.gather(*sent)

    async def stream_data(self) -> list[bytes]:
        """The JSON document of every event on the run's stream so far, in order (one
        XRANGE on the process's pipelined connection)."""
        rows = await mux_for(self.redis).execute("XRANGE", self._events_key, "-", "+")
        return [wire.raw_data(_pairs(fields)) for _, fields in rows]

    async def emit_checking_cancel(self, *events: ClientEvent) -> bool:
        """Write events and report whether a cancel was requested, in one round trip (on
        the pipelined connection, as `emit`: the commands leave in one write, in order)."""
        mux = mux_for(self.redis)
        key, maxlen = self._events_key, self.settings.events_maxlen
        sent = [
            mux.execute("XADD", key, "MAXLEN", "~", maxlen, "*", wire.DATA_FIELD, wire.encode(e))
            for e in events
        ]
        cancel = keys.run_cancel(self.command.run_id, self.command.shard)
        replies = await asyncio.gather(*sent, mux.execute("EXISTS", cancel))
        return bool(replies[-1])

    async def put_blob(self, name: str, data: bytes | str) -> str:
        """Store a bulky part of the run's state once; returns its key."""
        key = keys.run_blob(self.command.run_id, self.command.shard, name)
        await self.redis.set(key, data, ex=self.settings.run_ttl_s)
        return key

    async def get_blob(self, key: str) -> bytes | None:
        """Read a blob stored by ``put_blob`` (None once it expired)."""
        if not key.startswith(keys.run_prefix(self.command.run_id, self.command.shard)):
            # A command can only reference its own run's blobs.
            raise ValueError("blob key outside this run")
        return await self.redis.get(key)


async def join_values(ctx: StepContext, name: str) -> dict[str, str]:
    """Every member's contribution to a completed join, by member."""
    key = keys.run_join(ctx.command.run_id, ctx.command.shard, name)
    raw = await commands(ctx.redis).hgetall(key)
    return {k.decode(): v.decode() for k, v in raw.items()}


def _pairs(flat: list[bytes]) -> dict[bytes, bytes]:
    """A stream entry's fields, as RESP sends them (name, value, name, value, ...)."""
    return dict(zip(flat[::2], flat[1::2], strict=True))
