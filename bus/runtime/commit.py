"""A step's commit: its effects encoded and checked, then applied by one Lua script.

The script (``scripts.COMMIT``) marks the step done, publishes the next commands, the
step's events and ledger records, contributes to a join, and acks the entry, all at once
or not at all. It goes out on the process's pipelined connection (`bus.redis_io.mux`; on a
cluster, the connection to the master of the run's shard).

With ``redis_wait_replicas`` set, a ``WAIT`` follows the script on the same connection and
the commit counts only once that many replicas hold it: a master that fails over after
that loses none of it. A commit without the acknowledgement raises `ReplicaAckMissing`;
the step stays pending and is retried, and its retry finds the step done if the write
survived.
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from redis.exceptions import NoScriptError

from bus import keys, tracing, wire
from bus.budget import BudgetLedger, Charge
from bus.errors import MessageTooLarge, ReplicaAckMissing
from bus.fence import Fence, unfenced
from bus.redis_io.shared_mux import mux_for
from bus.runtime.handoff import handoff_for
from bus.runtime.scripts import COMMIT, COMMIT_SHA

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.commands import Command
    from bus.events import FinalStatus
    from bus.runtime.consumer import Entry
    from bus.runtime.context import StepResult
    from bus.settings import BusSettings

# What the commit script returns.
DUPLICATE, COMMITTED, CANCELLED, ERASED = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class Prepared:
    """A step's effects, encoded and checked, ready for the commit script.

    The commands and records to publish are two parallel lists, streams and messages,
    which the script's keys and arguments take as they are.
    """

    streams: list[str]
    messages: list[bytes]
    events: list[str]
    finished: FinalStatus | None
    replies: list[tuple[str, str]]
    join: tuple[list[str], list[str | int]]
    commands: list[Command] = field(default_factory=lambda: [])
    """The commands, in the order of the first ``len(commands)`` messages."""
    charge: Charge | None = None
    """What the step's model calls spent, charged with the commit (none spent: None)."""


def prepare(command: Command, result: StepResult, settings: BusSettings) -> Prepared:
    """Encode and check a step's effects (a bad result fails the step, not the commit)."""
    streams: list[str] = []
    messages: list[bytes] = []
    following = [stamped(c) for c in result.next]
    for c in following:
        data = wire.encode(c)
        if c.shard != command.shard:
            raise ValueError("a run's commands stay on its shard")
        if len(data) > settings.max_message_bytes:
            raise MessageTooLarge(
                f"{c.role} command is {len(data)} bytes, over the "
                f"{settings.max_message_bytes}-byte budget"
            )
        streams.append(keys.role_stream(c.role, c.shard))
        messages.append(data.encode())
    if result.records:
        streams += [keys.role_stream(keys.Role.RECORDER, command.shard)] * len(result.records)
        messages += [wire.encode(r).encode() for r in result.records]
    events = [wire.encode(e) for e in result.events]
    join: tuple[list[str], list[str | int]] = ([], [0])
    if result.join is not None:
        j = result.join
        then = wire.encode(stamped(j.then))
        join = (
            [
                keys.run_join(command.run_id, command.shard, j.name),
                keys.role_stream(j.then.role, j.then.shard),
            ],
            [1, j.member, j.value, j.expected, then],
        )
    charge = result.charge
    if charge is not None and not (charge.tokens or charge.micro_usd):
        charge = None
    return Prepared(
        streams, messages, events, result.finished, list(result.replies), join, following, charge
    )


def stamped(command: Command) -> Command:
    """``command`` carrying the current span as its parent, with tracing on (the step's
    span: prepare runs inside it), so the step it starts is a child of this one."""
    if not tracing.ENABLED:
        return command
    return command.with_trace(tracing.current() or command.trace)


class Committer:
    """Runs the commit script for one consumer group's entries."""

    def __init__(
        self,
        redis: Redis,
        settings: BusSettings,
        group: str,
        *,
        check_cancel: bool = True,
        fence: Fence | None = None,
    ) -> None:
        self.redis = redis
        # Without an erasure key (a test's bare worker) the script checks a key never set.
        self._fence = fence
        # Off for steps that run after their run ended (a late cancel does not stop them).
        self._check_cancel = check_cancel
        self.settings = settings
        self.group = group
        self._mux = mux_for(redis)
        self._handoff = handoff_for(redis)
        n = settings.redis_wait_replicas
        self._wait = ("WAIT", n, settings.redis_wait_timeout_ms) if n > 0 else None
        # A cluster keeps a tenant's budget counters in another slot than a run's keys.
        self._charge_apart = settings.redis_cluster

    async def commit(self, entry: Entry, command: Command, prep: Prepared) -> int:
        """Apply ``prep``: `COMMITTED`, `DUPLICATE` (another delivery already committed),
        `CANCELLED` (the run was cancelled; nothing was changed) or `ERASED` (its user is
        being erased, `bus.fence`: nothing was changed, the entry is still to ack)."""
        shard, s = command.shard, self.settings
        fenced = (
            unfenced(shard)
            if self._fence is None
            else self._fence.key_of(command.tenant_id, command.subject, shard)
        )
        for reply_stream, data in prep.replies:
            # Outside the run's hash tag, so not in the script: at least once, before it.
            await self.redis.xadd(reply_stream, {wire.DATA_FIELD: data}, maxlen=s.stream_maxlen)
        expire = s.events_ttl_s if prep.finished else 0
        charge = prep.charge
        if charge is not None and self._charge_apart:
            await self._charge_before(command, charge)
            charge = None
        for data, next_command in zip(prep.messages, prep.commands, strict=False):
            self._handoff.put(data, next_command)  # before the write: it may be read at once
        done = await self._run(
            [
                entry.stream,
                keys.run_steps(command.run_id, shard),
                keys.run_events(command.run_id, shard),
                keys.run_cancel(command.run_id, shard),
                fenced,
                *prep.streams,
                *prep.join[0],
                *(() if charge is None else charge.keys()),
            ],
            [
                self.group,
                entry.id,
                command.step_id,
                s.run_ttl_s,
                len(prep.streams),
                s.stream_maxlen,
                s.events_maxlen,
                expire,
                len(prep.events),
                # A step that ends the run ends it regardless.
                0 if prep.finished or not self._check_cancel else 1,
                *prep.messages,
                *prep.events,
                *prep.join[1],
                *(() if charge is None else charge.args()),
            ],
        )
        if isinstance(done, list):  # committed, and charged: the counters' new totals
            assert charge is not None
            if charge.spent is not None:
                charge.spent(charge.totals(cast("list[object]", done)))
            return COMMITTED
        return int(done)

    async def _charge_before(self, command: Command, charge: Charge) -> None:
        """On a cluster: the step's charge, once per step id, just before its commit (a
        step that dies in between is charged by this and not again by its retry)."""
        ledger = BudgetLedger(self.redis, charge.tenant_id, charged_ttl_s=self.settings.run_ttl_s)
        spent = await ledger.settle(
            f"{command.step_id}:step",
            charge.scopes,
            tokens=charge.tokens,
            micro_usd=charge.micro_usd,
            held=False,
        )
        if spent is not None and charge.spent is not None:
            charge.spent(spent)

    async def _run(self, keys: list[str], args: list[Any]) -> Any:
        try:
            return await self._send("EVALSHA", COMMIT_SHA, len(keys), *keys, *args)
        except NoScriptError:
            # A restarted, flushed or newly promoted server: EVAL sends the script along
            # (and caches it there), on the same connection, to the same master.
            return await self._send("EVAL", COMMIT, len(keys), *keys, *args)

    def _send(self, *command: Any) -> Awaitable[Any]:
        # Without a WAIT, the mux's own coroutine: no extra frame on every step's path.
        return self._mux.execute(*command) if self._wait is None else self._waited(command)

    async def _waited(self, command: tuple[Any, ...]) -> Any:
        assert self._wait is not None
        done, acked = await self._mux.execute_then(self._wait, *command)
        if int(acked) < self._wait[1]:
            raise ReplicaAckMissing(
                f"{acked} of {self._wait[1]} replicas acknowledged the commit in "
                f"{self._wait[2]} ms; the step stays pending and is retried"
            )
        return done
