"""Publishing a run exactly once, in its conversation's turn.

A run is published by one Lua script (`bus.publish_once.PUBLISH_ONCE`) that records
its owner and queues its intake command for fair admission (`bus.fairshare`; a full tenant
queue is 429 ``tenant_queue_full``), with its webhook's registration: publishing the same
run id again is a no-op. With the conversation turns wired in, the run is admitted into its
conversation first (`api.app.turn_admission`): a run queued behind the running one is
stored with the script's call, to be published when its turn comes, and holds no slot of
the tenant's concurrent-run quota while it waits. The first run of a conversation drawn
for it is not admitted in SQL: its publish writes its turn too (`bus.first_turns`).

A run of a caller whose key's tenant version is still to be checked (``RunToPublish.version``)
is published by the variant that checks it first (`bus.publish_once.PUBLISH_IF_CURRENT`):
if the version moved, nothing is written, what the run held is given back, and
`VersionMoved` tells the starter to check the key again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from api.app import metrics
from api.app.access import owner_value
from api.app.ask import Started
from api.app.errors import ApiError, InvalidRequest, TenantQueueFull
from api.app.turn_admission import NewTurn, admit, give_back
from api.app.turn_publisher import publish_call
from api.app.webhook_requests import webhook_registration
from bus import fairshare, keys, tracing, wire
from bus.commands import AgentTask, Command, RunState, TraceContext
from bus.store import Scope
from bus.store.turn_types import Admission, FirstTurn, TurnState

if TYPE_CHECKING:
    from api.app.ask import Ask
    from api.app.auth import Principal
    from api.app.ports import CancelRun, RateLimits
    from api.app.turn_publisher import TurnPublisher
    from bus.run_state import Multitask, RunSettings
    from bus.settings import BusSettings
    from bus.typed_redis import Script

#: The keys and the arguments of one call of the publish-once script.
PublishCall = tuple[list[str], list[str | int | float]]


@dataclass(frozen=True, slots=True)
class RunToPublish:
    """A run the starter has checked and placed, ready to publish.

    Attributes:
        who: the caller.
        ask: what they asked.
        run_id: the run's id.
        conversation_id: its conversation.
        settings: the run's settings, resolved.
        shard: the bus shard its keys live on.
        deadline: when it must end (epoch seconds).
        weight: the tenant's fair-share weight.
        version: the tenant's settings version the caller's key was cached at, to check as
            the run is published (None: checked before; only for a run whose conversation
            and id were drawn now, which nothing can have queued or stored yet).
    """

    who: Principal
    ask: Ask
    run_id: str
    conversation_id: str
    settings: RunSettings
    shard: int
    deadline: float
    weight: int = 1
    version: int | None = None


class VersionMoved(Exception):
    """The tenant's settings version on the run's shard is not the one the caller's key was
    cached at: nothing was published. Never leaves the starter."""

    def __init__(self, tenant_id: str, shard: int, seen: int) -> None:
        super().__init__(f"tenant {tenant_id!r} is at settings version {seen} on shard {shard}")
        self.tenant_id = tenant_id
        self.shard = shard
        self.seen = seen


def intake_call(run: RunToPublish, bus: BusSettings) -> PublishCall:
    """The publish-once call that starts the run: its intake command in the current trace
    (else the caller's), with the caller's ACL groups, queued at the run's priority."""
    who, ask, run_id, shard, deadline = run.who, run.ask, run.run_id, run.shard, run.deadline
    conversation_id, settings = run.conversation_id, run.settings
    command = Command(
        run_id=run_id,
        tenant_id=who.tenant_id,
        subject=who.subject,
        shard=shard,
        role=keys.Role.INTAKE,
        deadline=deadline,
        trace=tracing.current() or ask.trace or TraceContext(),
        reply_to=ask.reply_to,
        groups=who.groups,
        payload=AgentTask(
            state=RunState(
                question=ask.question,
                conversation_id=conversation_id,
                parent_message_id=ask.parent_message_id,
                settings=settings,
                started_at=time.time(),
            )
        ),
    )
    run_keys = [keys.run_owner(run_id, shard), keys.role_stream(keys.Role.INTAKE, shard)]
    run_keys += keys.fair_keys(shard)
    args: list[str | int | float] = [owner_value(who.tenant_id, who.subject), bus.run_ttl_s]
    args += [bus.stream_maxlen, wire.encode(command), int(bus.fair_share), who.tenant_id]
    args += [fairshare.LEVEL[settings.priority], run_id, deadline, run.weight]
    args += [bus.fair_max_pending, time.time(), bus.fair_depth, bus.fair_inflight]
    if ask.webhook is not None:
        extra_keys, extra_args = webhook_registration(
            who, ask.webhook, run_id, shard, conversation_id
        )
        run_keys, args = [*run_keys, *extra_keys], [*args, *extra_args]
    return run_keys, args


def same_trace(current: TraceContext | None, caller: TraceContext | None) -> bool:
    """Whether the current span is in the caller's trace already (so it is the publish span's
    parent), or the caller sent none."""
    if current is None or not current.traceparent:
        return False
    if caller is None or not caller.traceparent:
        return True
    return current.traceparent.split("-")[1] == caller.traceparent.split("-")[1]


class RunPublisher:
    """Publishes admitted runs (the starter's last step).

    Args:
        script: the publish-once script (`bus.publish_once.publish_once`).
        if_current: the variant that checks the tenant's settings version first
            (`bus.publish_once.publish_if_current`).
        cancel: asks a run to stop (a question that interrupts or rolls it back).
        bus: the bus's settings (shards, stream cap, key lifetime, fair share).
        limits: the per-tenant concurrent-run quota, whose slot a run gives back when it
            waits or is not published.
        turns: publishes runs in their conversation's turn (None: every run is published
            at once).
    """

    def __init__(
        self,
        script: Script,
        if_current: Script,
        cancel: CancelRun,
        bus: BusSettings,
        limits: RateLimits,
        turns: TurnPublisher | None,
    ) -> None:
        self._cancel = cancel
        self._bus = bus
        self._limits = limits
        self._turns = turns
        self._publish = script
        self._if_current = if_current

    async def send(self, run: RunToPublish, replay: bool, policy: Multitask) -> Started:
        """Admit the run into its conversation's turn (if turns are wired in), then publish
        it unless it waits. A run refused, or queued, gives back its quota slot; one the
        script refused gives back its slot and its turn, one whose publish raised its turn.

        Raises:
            ConversationBusy, ConversationNotFound: the turn admission refused it.
            TenantQueueFull: the tenant's fair-share queue on the shard is full.
            InvalidRequest: another owner's run has this run id.
            VersionMoved: the tenant's settings version is not ``run.version``.
        """
        who, ask, run_id, settings = run.who, run.ask, run.run_id, run.settings
        conversation_id, shard = run.conversation_id, run.shard
        tracing.set_attributes({"agentbus.mode": settings.mode, "agentbus.replay": replay})
        run_keys, args = intake_call(run, self._bus)
        admission = None
        fresh = not replay and ask.conversation_id is None and ask.run_id is None
        first_turns = None if self._turns is None else self._turns.first_turns
        if first_turns is not None and fresh and first_turns.shard(conversation_id) == shard:
            # Both ids drawn just now, on one shard: the run's turn is written with it.
            first = FirstTurn(
                run_id, who.tenant_id, who.subject, ask.question,
                settings.timeout_s or run.deadline - time.time(), run.deadline,
            )  # fmt: skip
            version = keys.tenant_settings_version_on(who.tenant_id, shard)
            expected = "" if run.version is None else run.version
            reply = await first_turns.script(
                keys=[*run_keys, first_turns.key(conversation_id), version],
                args=[*args, first.dumps(), expected],
            )
            return await self._outcome(run, replay, reply, None)
        if self._turns is not None:
            turn = NewTurn(
                Scope.user(who.tenant_id, who.subject),
                conversation_id,
                run_id,
                ask.question,
                publish_call(run_keys, args),
                settings.timeout_s or run.deadline - time.time(),
                settings.mode,
                ask.parent_message_id,
                # Both ids drawn by the starter just now: nothing of the run can exist yet.
                fresh=fresh,
                first=None if first_turns is None else await first_turns.read(conversation_id),
            )
            try:
                admission = await admit(self._turns, turn, policy, self._cancel)
            except ApiError:
                await self._limits.release(who.tenant_id, run_id)
                raise
            if admission.state == TurnState.QUEUED:
                await self._limits.release(who.tenant_id, run_id)  # it holds no slot waiting
                return Started(
                    run_id,
                    conversation_id,
                    shard,
                    replayed=replay or admission.replayed,
                    queued=True,
                    ahead=admission.ahead,
                )
        try:
            if run.version is None:
                reply = await self._publish(keys=run_keys, args=args)
            else:
                version_key = keys.tenant_settings_version_on(who.tenant_id, shard)
                reply = await self._if_current(
                    keys=[*run_keys, version_key], args=[*args, run.version]
                )
        except BaseException:
            if admission is not None and not admission.replayed:
                await give_back(self._turns, who.scope, run_id)
            raise
        return await self._outcome(run, replay, reply, admission)

    async def _outcome(
        self, run: RunToPublish, replay: bool, reply: Any, admission: Admission | None
    ) -> Started:
        """What the publish script answered, as the caller's `Started` or an error; a run
        it refused gives back what it held."""
        who, run_id, shard = run.who, run.run_id, run.shard
        outcome = int(reply[0])
        if outcome < 0:
            await self._limits.release(who.tenant_id, run_id)
            if admission is not None and not admission.replayed:
                await give_back(self._turns, who.scope, run_id)
        if outcome == -3:
            raise VersionMoved(who.tenant_id, shard, int(reply[1]))
        if outcome == -2:
            waiting, room = int(reply[1]), int(reply[2])
            raise TenantQueueFull(
                f"tenant {who.tenant_id!r} has {waiting} runs waiting on this shard",
                retry_after=fairshare.retry_after_s(waiting, room),
            )
        if outcome < 0:
            raise InvalidRequest(f"run id {run_id!r} is taken", field="run_id")
        if outcome > 0:
            metrics.RUNS_BY_MODE.labels(run.settings.mode).inc()
        return Started(run_id, run.conversation_id, shard, replayed=replay or outcome == 0)
